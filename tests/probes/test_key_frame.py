"""The key-frame scores: orthogonality in Paper I's sense (1 − mean |cos|, norms ignored, a
shared offset counted), its chance level and Welch ceiling, and isotropy under its own name."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import key_frame as kf


def _orthonormal(m: int, d: int, seed: int = 0) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q[:m]


@pytest.mark.parametrize("spread", [1.0, 9.0, 100.0])
def test_orthogonal_keys_score_one_whatever_their_norms(spread):
    norms = np.geomspace(1.0, spread, 10)
    keys = norms[:, None] * _orthonormal(10, 32)
    assert kf.frame_orthogonality(keys) == pytest.approx(1.0, abs=1e-12)
    s = kf.score_frame(keys)
    assert s.orthogonalisable and s.ceiling == 1.0 and s.vs_ceiling == pytest.approx(1.0)
    assert s.reduction_vs_random == pytest.approx(1.0)
    if spread > 1:  # the old participation-ratio score read these as far from orthogonal
        assert s.isotropy < 0.95


def test_a_shared_offset_scores_low_though_isotropy_ignores_it():
    rng = np.random.default_rng(1)
    keys = _orthonormal(8, 16, 1) + 3.0 * rng.normal(size=16)  # orthonormal + one shared vector
    assert kf.frame_orthogonality(keys) < 0.2
    assert kf.isotropy(keys) == pytest.approx(1.0, abs=1e-9)  # centring removes the offset
    line = np.outer(rng.normal(size=12), rng.normal(size=16))
    assert kf.frame_orthogonality(line) == pytest.approx(0.0, abs=1e-12)
    assert kf.isotropy(line) == pytest.approx(0.0, abs=1e-9)
    assert kf.effective_rank(line) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(("m", "d"), [(16, 64), (64, 64), (20, 16), (200, 64)])
def test_random_vectors_score_at_the_closed_form_chance(m, d):
    rng = np.random.default_rng([m, d])
    got = np.mean([kf.mean_abs_cos(rng.normal(size=(m, d))) for _ in range(40)])
    assert got == pytest.approx(kf.random_abs_cos(d), rel=0.03)
    assert kf.random_abs_cos(64) == pytest.approx(np.sqrt(2 / (np.pi * 64)), rel=0.01)


def test_more_keys_than_dimensions_are_flagged_against_the_welch_ceiling():
    d, m = 16, 20
    s = kf.score_frame(np.random.default_rng(3).normal(size=(m, d)))
    assert not s.orthogonalisable and s.welch == pytest.approx(np.sqrt(4 / (16 * 19)))
    assert s.ceiling == pytest.approx(1 - s.welch) and s.vs_ceiling == pytest.approx(
        s.orthogonality / s.ceiling)
    # d + 1 keys: the regular simplex is equiangular and attains the Welch bound exactly
    simplex = np.eye(d + 1) - 1.0 / (d + 1)  # lives in a d-dimensional subspace of R^{d+1}
    _, sv, vt = np.linalg.svd(simplex)
    in_d = simplex @ vt[:d].T  # [d + 1, d]: its coordinates in that subspace
    assert sv[-1] < 1e-12
    assert kf.mean_abs_cos(in_d) == pytest.approx(kf.welch_bound(d + 1, d), abs=1e-12)
    assert kf.score_frame(in_d).vs_ceiling == pytest.approx(1.0)
    assert kf.welch_bound(16, 16) == 0.0 and kf.score_frame(_orthonormal(16, 16)).orthogonalisable


@pytest.mark.parametrize(("m", "d"), [(16, 64), (64, 64),
                                      pytest.param(200, 64, marks=pytest.mark.slow), (20, 16)])
@pytest.mark.parametrize("centre", [True, False])
def test_random_frames_isotropy_near_its_analytic_chance_level(m, d, centre):
    rng = np.random.default_rng([m, d])
    scores = [kf.isotropy(rng.normal(size=(m, d)), centre) for _ in range(40)]
    assert np.mean(scores) == pytest.approx(kf.random_isotropy(m, d, centre), abs=0.015)


def test_score_frame_and_bad_frames():
    s = kf.score_frame(np.random.default_rng(2).normal(size=(8, 32)))
    assert (s.m, s.d) == (8, 32) and 0 < s.utilisation <= 7 / 32 + 1e-12
    assert s.orthogonality == pytest.approx(1 - s.mean_abs_cos)
    assert s.chance == pytest.approx(1 - kf.random_abs_cos(32))
    with pytest.raises(ValueError, match="shape"):
        kf.frame_orthogonality(np.ones(5))
    with pytest.raises(ValueError, match="non-zero"):
        kf.frame_orthogonality(np.zeros((4, 8)))
    with pytest.raises(ValueError, match="non-zero"):
        kf.isotropy(np.ones((4, 8)))  # all keys equal: nothing left after centring
    with pytest.raises(ValueError, match="finite"):
        kf.frame_orthogonality(np.full((4, 8), np.nan))
