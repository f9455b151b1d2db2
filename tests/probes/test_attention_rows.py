"""Attention rows: JS divergence and mass on a set of keys (probes.attention_rows)."""

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from bayesgeom.probes.attention_rows import attention_mass, content_masks, js_divergence_bits


def test_matches_scipy_and_is_symmetric_and_bounded():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(7), size=50), rng.dirichlet(np.ones(7), size=50)
    js = js_divergence_bits(p, q)
    ref = jensenshannon(p, q, base=2, axis=-1) ** 2  # scipy returns the distance (sqrt)
    np.testing.assert_allclose(js, ref, atol=1e-12)
    np.testing.assert_allclose(js, js_divergence_bits(q, p), atol=1e-15)
    assert ((js >= 0) & (js <= 1)).all()


def test_zero_on_equal_rows_one_on_disjoint_and_padding_ignored():
    p = np.array([[0.2, 0.8, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    assert js_divergence_bits(p, p).tolist() == [0.0, 0.0]
    assert float(js_divergence_bits(p[1], np.array([0.0, 0.0, 1.0, 0.0]))) == pytest.approx(1.0)
    # unnormalised rows are renormalised; negative rounding noise is clipped
    assert float(js_divergence_bits([2.0, 2.0, -1e-9], [0.5, 0.5, 0.0])) == pytest.approx(0.0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="positive"):
        js_divergence_bits(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="shape"):
        js_divergence_bits(np.ones(3), np.ones(4))


def test_attention_mass_per_layer_over_rows_with_a_masked_key():
    pat = np.zeros((3, 2, 2, 4))
    pat[..., 0] = 0.25
    pat[..., 1] = 0.75
    mask = np.array([[True, False, False, False], [False, True, False, False],
                     [False, False, False, False]])  # the last row has nothing masked
    np.testing.assert_allclose(attention_mass(pat, mask), [0.5, 0.5])
    assert np.isnan(attention_mass(pat, np.zeros((3, 4), bool))).all()
    with pytest.raises(ValueError, match="rows"):
        attention_mass(pat, mask[:, :3])


def test_content_masks_on_a_repeated_key():
    # V = 3 values as tokens 3..5; π(0) = 1, π(1) = 2; keys 0, 1, then 0 again (a repeat)
    ids = np.array([[0, 4, 1, 5, 0]])
    qpos = np.array([0, 2, 4])
    post = np.array([[[1 / 3] * 3, [0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]])
    feas, elim = content_masks(ids, qpos, post, hyp_offset=3)
    assert feas.shape == elim.shape == (3, 5)
    assert not feas[:2].any()  # fresh keys: nothing shown is still feasible
    assert feas[2].tolist() == [True, True, False, False, False]  # the same key and its value
    assert elim.tolist() == [[False] * 5, [False, True, False, False, False],
                             [False, False, False, True, False]]
