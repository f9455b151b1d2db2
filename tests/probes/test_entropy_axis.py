"""Entropy axis: planted-axis recovery, sign convention, sigma, save/load with provenance."""

import json

import numpy as np
import pytest

from bayesgeom.probes import AxisProvenance, EntropyAxis, fit_entropy_axis, prompt_set_hash


def _planted(n=3000, d=24, sign=1.0, seed=0, equal_entries=False):
    """x = 4·t·a + noise; entropy = sign·t + small noise. Returns x, entropy, a."""
    rng = np.random.default_rng(seed)
    if equal_entries:  # equal |entries|: every coordinate has the same variance
        a = rng.choice([-1.0, 1.0], size=d) / np.sqrt(d)
    else:
        a = rng.standard_normal(d)
        a /= np.linalg.norm(a)
    t = rng.standard_normal(n)
    x = 4.0 * np.outer(t, a) + rng.standard_normal((n, d)) + 10.0
    return x.astype(np.float32), sign * t + 0.1 * rng.standard_normal(n), a


@pytest.mark.parametrize("method", ["pc1", "ridge", "mean_difference"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_planted_axis_recovered_with_sign_convention(method, sign):
    x, h, a = _planted(sign=sign)
    axis = fit_entropy_axis(x, h, method=method, standardize=False)
    cos = float(axis.direction @ a)
    assert abs(cos) >= 0.99
    assert np.sign(cos) == sign  # flipped so the projection increases with entropy
    proj = axis.project(x)
    assert np.corrcoef(proj, h)[0, 1] > 0.9
    assert axis.pearson > 0.9 and axis.spearman > 0.9
    assert axis.sigma == pytest.approx(proj.std(ddof=1))
    assert np.linalg.norm(axis.direction) == pytest.approx(1.0)


def test_standardized_pc1_axis_recovered_and_readout_direction():
    x, h, a = _planted(sign=-1.0, equal_entries=True)
    axis = fit_entropy_axis(x, h, method="pc1", standardize=True)
    assert axis.scale is not None
    assert float(axis.direction @ a) <= -0.99
    assert abs(float(axis.readout_direction @ a)) >= 0.99
    assert axis.explained_variance_ratio > 0.3
    np.testing.assert_allclose(axis.project_sigma(x).std(ddof=1), 1.0)


def test_axis_on_pure_noise_has_weak_correlation():
    rng = np.random.default_rng(5)
    axis = fit_entropy_axis(rng.standard_normal((400, 10)), rng.standard_normal(400))
    assert 0.0 <= axis.pearson < 0.2  # sign convention still holds


def test_save_load_round_trip(tmp_path):
    x, h, _ = _planted(d=8)
    prov = AxisProvenance(
        model="tiny",
        revision="abc123",
        site="values",
        layer=3,
        prompt_set="mixed",
        prompt_set_hash=prompt_set_hash(["a", "b"]),
    )
    axis = fit_entropy_axis(x, h, provenance=prov)
    st_path, js_path = axis.save(tmp_path / "axes" / "entropy_axis_L3.safetensors")
    assert st_path.name == "entropy_axis_L3.safetensors" and js_path.suffix == ".json"
    assert not list((tmp_path / "axes").glob("*.tmp"))
    back = EntropyAxis.load(tmp_path / "axes" / "entropy_axis_L3")
    for name in ("direction", "mean", "scale"):
        np.testing.assert_array_equal(getattr(back, name), getattr(axis, name))
    assert back.provenance == prov
    assert (back.sigma, back.method, back.n) == (axis.sigma, axis.method, axis.n)
    assert (back.pearson, back.spearman) == (axis.pearson, axis.spearman)
    np.testing.assert_array_equal(back.project(x), axis.project(x))
    meta = json.loads(js_path.read_text())
    assert meta["provenance"]["layer"] == 3 and meta["standardized"] is True


def test_load_rejects_arrays_that_do_not_match_the_json(tmp_path):
    x, h, _ = _planted(d=6)
    st_path, _ = fit_entropy_axis(x, h).save(tmp_path / "ax")
    other, _ = fit_entropy_axis(x[::-1] * 2, h[::-1]).save(tmp_path / "other")
    st_path.write_bytes(other.read_bytes())
    with pytest.raises(ValueError, match="hash"):
        EntropyAxis.load(tmp_path / "ax.json")


def test_centred_axis_round_trip_has_no_scale(tmp_path):
    x, h, _ = _planted(d=5)
    axis = fit_entropy_axis(x, h, standardize=False)
    axis.save(tmp_path / "c")
    back = EntropyAxis.load(tmp_path / "c")
    assert back.scale is None
    np.testing.assert_allclose(back.project(x), axis.project(x))


def test_prompt_set_hash_depends_on_order_and_content():
    assert prompt_set_hash(["a", "b"]) != prompt_set_hash(["b", "a"])
    assert prompt_set_hash(["a", "b"]) == prompt_set_hash(("a", "b"))
    assert len(prompt_set_hash([])) == 64
