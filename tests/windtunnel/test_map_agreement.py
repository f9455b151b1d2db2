"""MAP agreement is defined only where the Bayes argmax is unique: NaN at ties, the aggregate is
the mean over untied positions (with their count), and NaN survives the JSON records."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bayesgeom.records import read_json, write_json
from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.hmm import FLOOR_CENTS, OBS_BASE
from bayesgeom.windtunnel.metrics import (
    Accumulator,
    CalibrationReport,
    calibration_stats,
    report_from,
    unique_argmax,
)


def _report(logp: torch.Tensor, batch) -> tuple[CalibrationReport, torch.Tensor]:
    acc = Accumulator()
    s = calibration_stats(logp, batch.posterior, batch.targets)
    acc.add(s)
    return report_from(acc), s.map_agree


def test_unique_argmax_counts_near_ties_within_the_tolerance():
    p = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5 * (1 - 1e-14), 0.0], [0.6, 0.4, 0.0],
                      [0.5, 0.5 * (1 - 1e-9), 0.0]], dtype=torch.float64)
    assert unique_argmax(p).tolist() == [False, False, True, True]


def test_bijection_ties_are_nan_and_left_out():
    """Without replacement the posterior is uniform over the unrevealed values: tied at every
    position but the last when L = V (one value left there)."""
    b = make_task("bijection", V=6, L=6).sample(64, seed=0)
    untied = unique_argmax(b.posterior)
    assert not untied[:, :-1].any() and untied[:, -1].all()
    # a model whose argmax is always hypothesis 0: it agrees with the Bayes MAP at the last
    # position exactly when the one value left is 0
    logp = torch.log_softmax(torch.tensor([1.0, 0, 0, 0, 0, 0]).expand(64, 6, 6), -1)
    rep, agree = _report(logp, b)
    assert torch.isnan(agree[:, :-1]).all() and not torch.isnan(agree[:, -1]).any()
    expected = (b.targets[:, -1] == 0).double().mean().item()
    assert rep.map_untied == 64
    assert rep.map_agreement == pytest.approx(expected)
    assert 0 < expected < 0.5  # the old, tie-counting metric gave 1.0 at every tied position


def test_all_tied_gives_nan_and_survives_json(tmp_path):
    b = make_task("bijection", V=6).sample(32, seed=1)  # L = 5: two or more values left
    logp = torch.log(b.posterior.float().clamp_min(1e-12))
    rep, _ = _report(logp, b)
    assert math.isnan(rep.map_agreement) and rep.map_untied == 0
    write_json(tmp_path / "r.json", rep.to_dict())
    raw = read_json(tmp_path / "r.json")
    assert raw["map_agreement"] is None and raw["map_untied"] == 0
    back = CalibrationReport.from_dict(raw)
    assert math.isnan(back.map_agreement) and back.map_untied == 0
    assert back.entropy_mae_bits == rep.entropy_mae_bits
    # a report written before ties were left out reads back with no count
    old = {k: v for k, v in raw.items() if k != "map_untied"}
    assert CalibrationReport.from_dict(old).map_untied is None


def test_hmm_ties_at_the_first_observation_are_the_emission_ties():
    """With a uniform prior the first filtering posterior is ∝ E[:, o0]; the HMM's emission
    probabilities are whole cents, so it ties exactly when that column's largest cent value
    repeats. Later positions are (almost surely) untied."""
    t = make_task("hmm", K=4)
    b = t.sample(400, seed=2)
    S, O = t.S, t.O  # noqa: E741
    ids = b.input_ids.numpy()
    E = ids[:, 2 + S * S: 2 + S * S + S * O].reshape(-1, S, O) + FLOOR_CENTS
    o0 = ids[:, t.header_len + 1] - OBS_BASE
    col = E[np.arange(len(E)), :, o0]
    tied0 = (col == col.max(1, keepdims=True)).sum(1) >= 2
    untied = unique_argmax(b.posterior).numpy()
    assert tied0.any() and np.array_equal(~untied[:, 0], tied0)
    assert untied[:, 1:].all()

    logp = torch.log(b.posterior.float())
    rep, agree = _report(logp, b)
    assert rep.map_untied == int(untied.sum())
    assert np.array_equal(torch.isnan(agree).numpy(), ~untied)
    am = logp.argmax(-1) == b.posterior.argmax(-1)
    assert rep.map_agreement == pytest.approx(am.numpy()[untied].mean())
    assert rep.map_agreement > 0.99
