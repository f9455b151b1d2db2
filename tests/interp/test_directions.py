"""Variance-matched control directions: the axis' variance to float precision, orthogonal and
unit, seeded; the closest achievable variance (with a warning) when none carries it; clear
errors for bad input."""

from __future__ import annotations

import warnings

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import DirectionShapeError, NonFiniteActivationError, VarianceMatchWarning


def _acts(n: int, d: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scale = torch.linspace(3.0, 0.1, d, dtype=torch.float64)
    return torch.randn(n, d, generator=g, dtype=torch.float64) * scale + 1.5


@pytest.mark.parametrize(("n", "d"), [(300, 24), (40, 96)])  # more rows than features, fewer
def test_controls_carry_the_axis_variance_and_are_orthogonal(n, d):
    x = _acts(n, d)
    g = torch.Generator().manual_seed(1)
    axis = torch.randn(d, generator=g, dtype=torch.float64) * 4  # not unit: only its direction
    with warnings.catch_warnings():
        warnings.simplefilter("error", VarianceMatchWarning)
        r = interp.variance_matched_controls(axis, x, n=15, seed=3)
    assert r.shape == (15, d) and r.dtype == torch.float64
    u = axis / axis.norm()
    torch.testing.assert_close(r.norm(dim=1), torch.ones(15, dtype=torch.float64))
    assert (r @ u).abs().max() < 1e-12
    target = (x @ u).var()
    torch.testing.assert_close((x @ r.T).var(0), target.expand(15), rtol=1e-6, atol=0)
    torch.testing.assert_close(interp.variance_ratios(r, axis, x), torch.ones(15,
                               dtype=torch.float64), rtol=1e-6, atol=0)
    assert (r @ r.T - torch.eye(15, dtype=torch.float64)).abs().max() < 0.99  # distinct
    assert torch.equal(r, interp.variance_matched_controls(axis, x, n=15, seed=3))
    assert not torch.equal(r, interp.variance_matched_controls(axis, x, n=15, seed=4))


def test_an_unreachable_variance_warns_and_takes_the_closest():
    """The top principal direction carries more than any direction orthogonal to it."""
    x = _acts(500, 10)
    top = torch.linalg.svd(x - x.mean(0), full_matrices=False)[2][0]
    with pytest.warns(VarianceMatchWarning, match="carries its variance"):
        r = interp.variance_matched_controls(top, x, n=6, seed=0)
    ratios = interp.variance_ratios(r, top, x)
    best = torch.linalg.eigvalsh(torch.cov((x - (x @ top)[:, None] * top).T))[-1]
    torch.testing.assert_close(ratios * (x @ top).var(), 0.9 * best.expand(6), rtol=1e-6, atol=0)
    assert (r @ top).abs().max() < 1e-12 and (r @ r.T).abs().min() < 0.999  # still random


def test_bad_input_is_a_clear_error():
    x = _acts(20, 8)
    with pytest.raises(DirectionShapeError, match="axis has 7 entries"):
        interp.variance_matched_controls(torch.ones(7), x)
    with pytest.raises(DirectionShapeError, match="non-zero"):
        interp.variance_matched_controls(torch.zeros(8), x)
    with pytest.raises(DirectionShapeError, match="n must be"):
        interp.variance_matched_controls(torch.ones(8), x, n=0)
    with pytest.raises(DirectionShapeError, match="N >= 2"):
        interp.variance_matched_controls(torch.ones(8), x[:1])
    bad = x.clone()
    bad[3, 2] = float("nan")
    with pytest.raises(NonFiniteActivationError, match="NaN"):
        interp.variance_matched_controls(torch.ones(8), bad)


def test_non_finite_or_zero_input_is_refused_instead_of_returning_nan():
    x = _acts(20, 8)
    nan_axis = torch.ones(8)
    nan_axis[0] = float("nan")
    with pytest.raises(DirectionShapeError, match="1 NaN/inf"):
        interp.random_controls(nan_axis, n=2)
    with pytest.raises(DirectionShapeError, match="n must be an integer"):
        interp.random_controls(torch.ones(8), n=0)
    with pytest.raises(DirectionShapeError, match="NaN/inf"):
        interp.projection_std(x, nan_axis)
    with pytest.raises(DirectionShapeError, match="non-zero"):
        interp.projection_std(x, torch.zeros(8))
    bad = x.clone()
    bad[4, 1] = float("inf")
    with pytest.raises(NonFiniteActivationError, match="x holds NaN or inf in 1 of 20 rows"):
        interp.projection_std(bad, torch.ones(8))
    r = interp.random_controls(torch.ones(8, dtype=torch.float64), n=3)
    with pytest.raises(DirectionShapeError, match="NaN/inf"):
        interp.variance_ratios(r * float("nan"), torch.ones(8), x)
    with pytest.raises(DirectionShapeError, match="direction 1 has zero norm"):
        interp.variance_ratios(torch.stack([r[0], torch.zeros(8, dtype=torch.float64)]),
                               torch.ones(8), x)
    flat = x.clone()
    flat[:, 0] = 1.0  # no variance along the first axis
    with pytest.raises(DirectionShapeError, match="variance 0"):
        interp.variance_ratios(r, torch.eye(8)[0], flat)
