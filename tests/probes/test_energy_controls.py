"""Energy-matched control directions: independent draws that each carry the axis' energy, the
orthonormal construction only where it can, no matched control for the top-energy axis (said),
and how many independent controls a set amounts to, by directions and by effects."""

import numpy as np
import pytest

from bayesgeom.probes.effective_number import (
    effect_effective_number,
    effective_number,
    independent_reference,
)
from bayesgeom.probes.energy_controls import (
    UNREACHABLE_CAP,
    EnergyMoments,
    energy_matched_controls,
    independent_energy_controls,
)


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
    assert c.method == "orthonormal" and c.matched and c.reason == "" and not c.independent
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


def _top_heavy(seed: int = 0, n: int = 3000, d: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Activations [n, d] whose energy sits in 5 directions (20 each; the rest 1), and an axis
    carrying 12: one direction orthogonal to it can carry 12 (up to 20), but only about 8
    mutually orthogonal ones can (the top 9 average less), far from 20."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    var = np.r_[[20.0] * 5, [1.0] * (d - 5)]
    x = rng.normal(size=(n, d)) * np.sqrt(var) @ q.T
    w = np.sqrt((12 - 1) / (20 - 1))  # energy w²·20 + (1 − w²)·1 = 12
    axis = w * q[:, 0] + np.sqrt(1 - w ** 2) * q[:, 10]
    return x, axis


def test_independent_controls_each_carry_the_axis_energy_where_no_orthonormal_frame_can():
    x, axis = _top_heavy()
    m = EnergyMoments.of(x)
    u = axis / np.linalg.norm(axis)
    c = independent_energy_controls(axis, m, 200, seed=0)
    assert c.method == "independent" and c.matched and c.independent and c.per_frame == 1
    assert c.orthogonal < 20 and c.reach[0] < 1 < c.reach[1]
    r = c.directions
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), 1.0, atol=1e-12)
    assert np.abs(r @ u).max() < 1e-12
    np.testing.assert_allclose(np.einsum("ij,jk,ik->i", r, m.matrix, r), m.energy(u), rtol=1e-9)
    gram = r @ r.T
    assert np.abs(gram[np.triu_indices(200, 1)]).max() > 0.3  # not one orthonormal frame
    assert np.array_equal(independent_energy_controls(axis, m, 200, seed=0).directions, r)
    # drawn one at a time: the first 50 of 200 are the 50 of a draw of 50
    np.testing.assert_allclose(independent_energy_controls(axis, m, 50, seed=0).directions,
                               r[:50], atol=1e-12)
    # the orthonormal construction does not match here, so it draws these instead, and says so
    o = energy_matched_controls(axis, m, 200, seed=0)
    assert o.method == "independent" and o.matched and o.orthogonal == c.orthogonal
    assert f"only {o.orthogonal} mutually orthogonal" in o.reason


def test_the_top_energy_axis_has_no_matched_control_and_says_so():
    x = _acts()
    m = EnergyMoments.of(x)
    _, vecs = np.linalg.eigh(m.matrix)
    top = vecs[:, -1]
    for draw in (independent_energy_controls, energy_matched_controls):
        c = draw(top, m, 40, seed=0)
        assert c.method == "unmatched" and not c.matched and "top-energy" in c.reason
        assert c.reach[1] < 1 and c.orthogonal == 0 and c.independent
        # the nearest energy that leaves them random, every control alike
        np.testing.assert_allclose(c.energy_ratio, UNREACHABLE_CAP * c.reach[1], rtol=1e-8)
        assert np.abs(c.directions @ top).max() < 1e-12


def test_effective_number_of_planted_sets():
    e = np.eye(10)
    assert effective_number(e).value == pytest.approx(10)
    assert effective_number(np.tile(e[:1], (8, 1))).value == pytest.approx(1)
    two = np.vstack([np.tile(e[0], (5, 1)), np.tile(e[1], (5, 1))])
    assert effective_number(two).value == pytest.approx(2)
    assert effective_number(two).mean_abs_cos == pytest.approx(20 / 45)


def test_effect_effective_number_counts_shared_effects_once():
    rng = np.random.default_rng(0)
    pattern = rng.normal(size=150)
    # every control does one thing to the prompts, at its own strength
    shared = np.outer(rng.uniform(0.5, 2.0, size=60), pattern) + 0.05 * rng.normal(size=(60, 150))
    one = effect_effective_number(shared)
    assert one.value < 1.1 and one.top_share > 0.95 and one.n == 60 and one.prompts == 150
    # effects sharing nothing: what the reference says for 60 controls on 150 prompts (43.0)
    free = effect_effective_number(rng.normal(size=(60, 150)))
    assert independent_reference(60, 150) == pytest.approx(43.0, abs=0.05)
    assert free.value == pytest.approx(free.independent, rel=0.1) and free.top_share < 0.1
    # two patterns, half the controls each
    two = np.vstack([np.outer(rng.uniform(1, 2, 30), pattern),
                     np.outer(rng.uniform(1, 2, 30), rng.normal(size=150))])
    assert effect_effective_number(two + 0.01 * rng.normal(size=(60, 150))).value == \
        pytest.approx(2, abs=0.1)
    # a constant control (no correlation defined) and a NaN prompt are left out
    with_const = np.vstack([shared, np.full((1, 150), 0.3)])
    with_const[:, 7] = np.nan
    e = effect_effective_number(with_const)
    assert e.n == 60 and e.prompts == 149 and e.value < 1.1
    assert np.isnan(effect_effective_number(np.ones((5, 10))).value)
    with pytest.raises(ValueError, match="n controls"):
        effect_effective_number(np.ones(5))


def test_edit_energy_is_exact_for_affine_edits():
    x = _acts(d=12, n=300)
    m = EnergyMoments.of(x)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(12, 12)) * 0.3, rng.normal(size=12)

    def edit(rows: np.ndarray) -> np.ndarray:
        return rows + rows @ a.T + b

    moved = np.mean(((x @ a.T + b) ** 2).sum(1)) / np.mean((x ** 2).sum(1))
    assert m.edit_energy(edit) == pytest.approx(moved, rel=1e-9)
