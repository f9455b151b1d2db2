"""The key-frame scores: 1 for an orthogonal frame, 0 for rank 1, random frames at chance."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes.key_frame import (
    effective_rank,
    frame_orthogonality,
    random_frame_score,
    score_frame,
)


def test_an_exactly_orthogonal_frame_scores_one_centred_or_not():
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(32, 32)))
    frame = 3.0 * q[:10]  # 10 orthonormal directions, scaled
    assert frame_orthogonality(frame, centre=False) == pytest.approx(1.0, abs=1e-12)
    assert frame_orthogonality(frame) == pytest.approx(1.0, abs=1e-12)  # a simplex once centred
    assert frame_orthogonality(q) == pytest.approx(1.0, abs=1e-12)  # m = d
    assert effective_rank(frame, centre=False) == pytest.approx(10.0)


def test_a_rank_one_frame_scores_zero_and_a_shared_offset_is_ignored():
    rng = np.random.default_rng(1)
    line = np.outer(rng.normal(size=12), rng.normal(size=16))
    assert frame_orthogonality(line) == pytest.approx(0.0, abs=1e-9)
    assert frame_orthogonality(line, centre=False) == pytest.approx(0.0, abs=1e-9)
    assert effective_rank(line) == pytest.approx(1.0, abs=1e-6)
    q, _ = np.linalg.qr(rng.normal(size=(16, 16)))
    offset = q[:8] + 50.0 * rng.normal(size=16)  # orthonormal keys plus one big shared vector
    assert frame_orthogonality(offset) == pytest.approx(1.0, abs=1e-9)
    assert frame_orthogonality(offset, centre=False) < 0.05


@pytest.mark.parametrize(("m", "d"), [(16, 64), (64, 64), (200, 64), (20, 16)])
@pytest.mark.parametrize("centre", [True, False])
def test_random_frames_score_near_the_analytic_chance_level(m, d, centre):
    rng = np.random.default_rng([m, d])
    scores = [frame_orthogonality(rng.normal(size=(m, d)), centre) for _ in range(40)]
    assert np.mean(scores) == pytest.approx(random_frame_score(m, d, centre), abs=0.015)


def test_score_frame_and_bad_frames():
    s = score_frame(np.random.default_rng(2).normal(size=(8, 32)))
    assert (s.m, s.d) == (8, 32) and 0 < s.utilisation <= 7 / 32 + 1e-12
    with pytest.raises(ValueError, match="shape"):
        frame_orthogonality(np.ones(5))
    with pytest.raises(ValueError, match="non-zero"):
        frame_orthogonality(np.ones((4, 8)))  # all keys equal: nothing left after centring
    with pytest.raises(ValueError, match="finite"):
        frame_orthogonality(np.full((4, 8), np.nan))
