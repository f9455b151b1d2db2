import numpy as np
import pytest

from bayesgeom.probes import (
    ProbeConfig,
    entropy_probe,
    partial_spearman,
    position_design,
    position_residual,
)


def _positions_and_entropy(seed: int = 0):
    """Entropy = a function of position plus a part that varies at fixed position."""
    rng = np.random.default_rng(seed)
    pos = np.repeat(np.arange(0, 20, 2), 30)  # 10 query positions, 30 prompts each
    extra = rng.normal(size=pos.size)
    return pos, np.log2(21 - pos / 2) + 0.1 * extra, extra


def test_design_is_one_hot_for_few_positions_and_smooth_for_many():
    x, kind = position_design(np.repeat(np.arange(4), 10))
    assert kind.startswith("one-hot") and x.shape == (40, 4)
    np.testing.assert_array_equal(x.sum(1), 1.0)
    x, kind = position_design(np.arange(40))
    assert kind.startswith("cubic") and x.shape == (40, 3)


def test_residual_removes_what_position_explains():
    pos, h, extra = _positions_and_entropy()
    r = position_residual(h, pos)
    for p in np.unique(pos):  # one-hot design: the residual has zero mean at every position
        assert abs(r[pos == p].mean()) < 1e-9
    assert np.corrcoef(r, extra)[0, 1] > 0.95


def test_a_position_readout_has_no_partial_correlation_and_a_real_one_keeps_it():
    pos, h, _ = _positions_and_entropy()
    rng = np.random.default_rng(1)
    reads_position = -pos + 0.01 * rng.normal(size=pos.size)
    reads_entropy = h + 0.01 * rng.normal(size=pos.size)
    assert abs(np.corrcoef(reads_position, h)[0, 1]) > 0.6  # raw correlation looks strong
    assert abs(partial_spearman(reads_position, h, pos)) < 0.15
    assert partial_spearman(reads_entropy, h, pos) > 0.9


def test_probe_beyond_position_separates_position_from_entropy_features():
    pos, h, _ = _positions_and_entropy()
    rng = np.random.default_rng(2)
    onehot, _ = position_design(pos)
    position_only = np.hstack([onehot, rng.normal(size=(pos.size, 5))])
    with_entropy = np.hstack([position_only, (h + 0.01 * rng.normal(size=pos.size))[:, None]])
    cfg = ProbeConfig(seed=0)
    assert entropy_probe(position_only, h, cfg).r2 > 0.5  # position predicts entropy...
    resid = position_residual(h, pos)
    assert entropy_probe(position_only, resid, cfg).r2 < 0.1  # ...and nothing beyond it
    assert entropy_probe(with_entropy, resid, cfg).r2 > 0.8


def test_constant_residual_gives_nan():
    pos = np.repeat(np.arange(5), 10)
    assert np.isnan(partial_spearman(pos.astype(float), np.arange(50.0), pos))
    with pytest.raises(ValueError):
        partial_spearman(np.arange(5.0), np.arange(4.0), np.arange(5))
