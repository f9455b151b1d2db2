import numpy as np
import pytest

from bayesgeom.probes.effective_number import effective_number
from bayesgeom.probes.energy_controls import EnergyMoments, energy_matched_controls


def _acts(seed: int = 0, n: int = 2000, d: int = 64, offset: float = 0.7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return rng.normal(size=(n, d)) * np.linspace(4, 0.2, d) @ q.T + offset


def test_streaming_moments_equal_the_batch_ones():
    x = _acts()
    m = EnergyMoments.empty(x.shape[1])
    for part in np.array_split(x, 7):
        m.add(part.astype(np.float32))
    ref = EnergyMoments.of(x)
    np.testing.assert_allclose(m.matrix, ref.matrix, rtol=1e-5, atol=1e-6)
    assert m.count == len(x)
    assert m.mean_sq_norm == pytest.approx(np.mean((x ** 2).sum(1)), rel=1e-5)
    with pytest.raises(ValueError, match="non-finite"):
        m.add(np.full((1, x.shape[1]), np.nan))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_controls_carry_the_axis_energy_are_orthogonal_and_reproducible(seed):
    x = _acts(seed)
    m = EnergyMoments.of(x)
    rng = np.random.default_rng(seed + 10)
    axis = rng.normal(size=x.shape[1])
    c = energy_matched_controls(axis, m, 30, seed=seed)
    u = axis / np.linalg.norm(axis)
    assert c.method == "matched" and c.matched and c.reason == ""
    r = c.directions
    assert r.shape == (30, x.shape[1])
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), 1.0, atol=1e-12)
    assert np.abs(r @ u).max() < 1e-12
    np.testing.assert_allclose(r @ r.T, np.eye(30), atol=1e-9)  # one orthonormal frame
    energies = np.mean((x @ r.T) ** 2, axis=0)
    np.testing.assert_allclose(energies, np.mean((x @ u) ** 2), rtol=1e-8)
    assert effective_number(r).value == pytest.approx(30)
    again = energy_matched_controls(axis, m, 30, seed=seed)
    assert np.array_equal(again.directions, r)
    assert not np.array_equal(energy_matched_controls(axis, m, 30, seed=seed + 1).directions, r)


def test_more_controls_than_dimensions_take_further_frames_and_say_how_many_they_amount_to():
    x = _acts(d=16)
    m = EnergyMoments.of(x)
    axis = np.random.default_rng(3).normal(size=16)
    c = energy_matched_controls(axis, m, 50, seed=0)
    assert c.directions.shape == (50, 16) and c.per_frame <= 15
    eff = effective_number(c.directions, m)
    assert eff.n == 50 and eff.value <= 15 + 1e-9  # at most d − 1 directions orthogonal to u
    assert eff.energy <= 15 + 1e-9


def test_the_top_energy_axis_has_no_matched_control_and_falls_back():
    x = _acts()
    m = EnergyMoments.of(x)
    _, vecs = np.linalg.eigh(m.matrix)
    top = vecs[:, -1]
    c = energy_matched_controls(top, m, 40, seed=0)
    assert c.method == "top_subspace" and not c.matched and "top-energy" in c.reason
    assert c.per_frame == 20 and c.energy_ratio[1] < 1
    assert c.energy_ratio[1] - c.energy_ratio[0] < 1e-9  # equal energy within the fallback
    assert np.abs(c.directions @ top).max() < 1e-12


def test_effective_number_of_planted_sets():
    e = np.eye(10)
    assert effective_number(e).value == pytest.approx(10)
    assert effective_number(np.tile(e[:1], (8, 1))).value == pytest.approx(1)
    two = np.vstack([np.tile(e[0], (5, 1)), np.tile(e[1], (5, 1))])
    assert effective_number(two).value == pytest.approx(2)
    assert effective_number(two).mean_abs_cos == pytest.approx(20 / 45)


def test_edit_energy_is_exact_for_affine_edits():
    x = _acts(d=12, n=300)
    m = EnergyMoments.of(x)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(12, 12)) * 0.3, rng.normal(size=12)

    def edit(rows: np.ndarray) -> np.ndarray:
        return rows + rows @ a.T + b

    moved = np.mean(((x @ a.T + b) ** 2).sum(1)) / np.mean((x ** 2).sum(1))
    assert m.edit_energy(edit) == pytest.approx(moved, rel=1e-9)
