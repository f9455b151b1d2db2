"""Steering's null of control directions, on planted activations and readouts through the
experiment's own direction builder, edit functions, energies and effects table: a planted
effect survives; an axis with no effect does not, against controls that carry its energy
exactly even where no 20 orthogonal directions can; the top-energy axis has no matched control,
so its cut gets no verdict and its shift keeps one; controls with one shared effect count as
about one; a skewed null withholds the parametric p; how far a verdict is from the floor."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import torch

from bayesgeom.analyses.steer.config import MARGIN, SteerConfig, controls_needed
from bayesgeom.analyses.steer.nulls import LayerAxis, edit_directions, edit_energy
from bayesgeom.analyses.steer.result import ControlSet
from bayesgeom.analyses.steer.scores import Condition
from bayesgeom.analyses.steer.stats import effects_table
from bayesgeom.probes import AxisProvenance, EntropyAxis, null_test
from bayesgeom.probes.effective_number import independent_reference
from bayesgeom.probes.energy_controls import EnergyMoments, independent_energy_controls

Readout = Callable[[np.ndarray], np.ndarray]


def _layer_axis(u: np.ndarray, x: np.ndarray) -> LayerAxis:
    ax = EntropyAxis(direction=u, mean=np.zeros(u.size), scale=None, sigma=float(x.std()),
                     method="planted", n=len(x), pearson=1.0, spearman=1.0,
                     explained_variance_ratio=None, provenance=AxisProvenance())
    return LayerAxis.of(ax, x, "readout")


def _spread(seed: int = 0, n: int = 600, d: int = 120) -> tuple[np.ndarray, LayerAxis]:
    """Centred activations [n, d] with variance 9 along the planted axis: 40 random orthogonal
    directions carry more (13 to 11), so many mutually orthogonal ones can carry the axis'
    energy, and the other 79 carry far less (0.8 to 0.2)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    var = np.r_[9.0, np.linspace(13.0, 11.0, 40), np.linspace(0.8, 0.2, d - 41)]
    x = rng.normal(size=(n, d)) * np.sqrt(var) @ q.T
    x -= x.mean(0)
    return x, _layer_axis(q[:, 0], x)


def _top_heavy(seed: int = 0, n: int = 600, d: int = 60) -> tuple[np.ndarray, LayerAxis,
                                                                    np.ndarray]:
    """Activations [n, d] whose energy sits in 5 directions (20 each; the rest 1) and an axis
    carrying 12 of it: single directions orthogonal to it carry up to 20, but fewer than 10
    mutually orthogonal ones can carry 12 (the old fallback: 20 directions in the top-20
    subspace, carrying half of it). Also a random unit readout direction w [d]."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    var = np.r_[[20.0] * 5, [1.0] * (d - 5)]
    x = rng.normal(size=(n, d)) * np.sqrt(var) @ q.T
    c = np.sqrt((12 - 1) / (20 - 1))
    u = c * q[:, 0] + np.sqrt(1 - c ** 2) * q[:, 10]
    w = rng.normal(size=d)
    return x, _layer_axis(u, x), w / np.linalg.norm(w)


def _kl2(bayes: np.ndarray, logit: np.ndarray) -> np.ndarray:
    """KL(Bayes ‖ model) per row for two hypotheses, the model's P(first) = sigmoid(logit)."""
    q = np.clip(1 / (1 + np.exp(-logit)), 1e-12, 1 - 1e-12)
    return bayes * np.log(bayes / q) + (1 - bayes) * np.log((1 - bayes) / (1 - q))


def _planted(x: np.ndarray, la: LayerAxis, null: str, readout: Readout, n: int = 40,
             conds: tuple[Condition, ...] = (Condition("cut", 1.0),), metric: str = "kl_bayes",
             seed: int = 0) -> tuple[pd.DataFrame, ControlSet]:
    """The effects rows of ``metric`` for ``conds`` along the axis vs ``n`` ``null`` controls,
    each row of ``x`` one prompt (and its one edited position), ``readout(x') -> [rows]`` the
    per-prompt value whose mean is the metric (its per-prompt values feed the controls'
    effective number); with the layer's control set."""
    moments = EnergyMoments.of(x)
    dirs = edit_directions({0: la}, {0: x}, {0: moments}, null, n, seed=seed)
    base = {"group": None, "layer": None, "metric": metric}
    clean = readout(x)
    rows = [base | {"condition": "clean", "kind": "clean", "param": np.nan, "direction": "none",
                    "effect": "clean", "value": float(clean.mean())}]
    prompts = [pd.DataFrame({"condition": "clean", "effect": "clean", "direction": "none",
                             "prompt": np.arange(len(x)), "value": clean})]
    for cond in conds:
        tag = {"condition": cond.key, "kind": cond.kind, "param": cond.param}
        for name, (d,) in dirs:
            (iv,) = cond.interventions(["s"], [d], [la.sigma], "all")
            xe = iv.edit(torch.as_tensor(x), (d / d.norm()).double()).numpy()
            v = readout(xe)
            rows.append(base | tag | {"direction": name, "effect": "total",
                                      "value": float(v.mean())})
            rows.append(base | tag | {"direction": name, "effect": "edit", "layer": 0,
                                      "metric": "edit_energy",
                                      "value": edit_energy(moments, iv)})
            prompts.append(pd.DataFrame({"condition": cond.key, "effect": "total",
                                         "direction": name, "prompt": np.arange(len(x)),
                                         "value": v}))
    per_prompt = pd.concat(prompts, ignore_index=True) if metric == "kl_bayes" else None
    c = dirs.controls[0]
    eff = effects_table(pd.DataFrame(rows), head_layer=0, per_prompt=per_prompt,
                        independent=c.independent)
    return eff[eff["metric"] == f"d_{metric}"].reset_index(drop=True), c


def test_a_planted_effect_survives_exact_energy_controls_where_no_frame_carries_its_energy():
    """The model reads the axis (its logit is x·u, plus a little of a random direction w):
    cutting the axis moves the distance to the exact posterior, cutting controls that carry
    exactly as much energy moves it a little. Fewer than 20 orthogonal directions can carry the
    axis' energy here; the controls are independent draws that each do."""
    x, la, w = _top_heavy()
    u = la.unit
    logit = x @ u / 3 + 0.5 * x @ w / 3
    bayes = 1 / (1 + np.exp(-logit))
    r, c = _planted(x, la, "energy", lambda xe: _kl2(bayes, xe @ u / 3 + 0.5 * xe @ w / 3),
                    n=80)
    assert c.method == "independent" and c.independent and c.orthogonal < 20
    assert c.energy_ratio_min > 1 - 1e-6 and c.energy_ratio_max < 1 + 1e-6
    row = r.iloc[0]
    assert row["energy_ratio_min"] > 1 - 1e-6 and row["energy_ratio_max"] < 1 + 1e-6
    assert row["p"] == pytest.approx(1 / 81) and row["n_reached"] == 0
    assert row["withheld"] == "" and row["n_draws"] == 80 and row["survives"]
    # one condition, 80 controls: it would survive with up to 3 of them reaching it (4/81 < 0.05)
    assert row["n_reached_max"] == 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_axis_with_no_effect_does_not_survive_exact_energy_controls(seed):
    """The axis is itself a random direction carrying the energy 12 (drawn as a control is), and
    the model's output depends on each row's norm (and a little on a random direction w):
    nothing on the axis beyond the energy it carries. Controls that each carry its energy
    exactly find nothing; the half-energy ones that fewer than 20 orthogonal directions forced
    before make a full cut of the axis look special."""
    x, la0, w = _top_heavy(seed)
    d = x.shape[1]
    u = independent_energy_controls(la0.unit, EnergyMoments.of(x), 1, seed=seed).directions[0]
    la = _layer_axis(u, x)

    def logit(xe: np.ndarray) -> np.ndarray:
        return 2 * np.log1p((xe ** 2).sum(1) / d) - 2 * np.log1p(2.0) + 0.1 * xe @ w

    bayes = 1 / (1 + np.exp(-logit(x)))
    r, c = _planted(x, la, "energy", lambda xe: _kl2(bayes, logit(xe)), n=80, seed=seed)
    row = r.iloc[0]
    assert c.orthogonal < 20 and c.method == "independent"
    assert row["energy_ratio_max"] - 1 < 1e-6 and 1 - row["energy_ratio_min"] < 1e-6
    assert row["withheld"] == "" and not row["survives"] and row["p"] > 0.05
    # the same cut against what the old fallback drew, random orthonormal directions in the
    # top-20 eigen-subspace orthogonal to u, which carry about half its energy: p ≤ 0.05, the
    # one test of the run "survives"
    m = EnergyMoments.of(x)
    basis = np.linalg.qr(np.column_stack([u, np.eye(d)]))[0][:, 1:d]
    top20 = basis @ np.linalg.eigh(basis.T @ m.matrix @ basis)[1][:, -20:]
    rng = np.random.default_rng(seed)
    old = np.vstack([(top20 @ np.linalg.qr(rng.normal(size=(20, 20)))[0]).T for _ in range(4)])
    assert np.mean([m.energy(v) for v in old]) / m.energy(u) < 0.6

    def cut_effect(v: np.ndarray) -> float:
        return float(_kl2(bayes, logit(x - np.outer(x @ v, v))).mean())

    t = null_test(cut_effect(u), [cut_effect(v) for v in old])
    assert t.p <= 0.05 and row["axis"] == pytest.approx(cut_effect(u))


def test_the_top_energy_axis_gets_no_cut_verdict_but_its_shift_keeps_one():
    """No direction orthogonal to the top-energy axis carries its energy: the controls carry
    the nearest energy that leaves them random, a cut along them removes less than along the
    axis, so the cut gets no verdict; a shift moves δσ along any direction, so it keeps one."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(500, 30)) * np.linspace(5, 0.5, 30)
    la = _layer_axis(np.eye(30)[0], x)
    u = la.unit
    bayes = 1 / (1 + np.exp(-x @ u / 5))
    r, c = _planted(x, la, "energy", lambda xe: _kl2(bayes, xe @ u / 5), n=60,
                    conds=(Condition("cut", 1.0), Condition("shift", 1.0)))
    assert c.method == "unmatched" and "no direction orthogonal" in c.reason and not c.matched
    assert c.reach_max < 1 and c.energy_ratio_max - c.energy_ratio_min < 1e-6
    cut, shift = r.iloc[0], r.iloc[1]
    assert cut["condition"] == "cut+1" and "of the axis' energy" in cut["withheld"]
    assert cut["energy_ratio_max"] < 0.99 and cut["p"] == pytest.approx(1 / 61)
    assert not cut["survives"] and cut["verdict_withheld"]
    assert shift["withheld"] == "" and shift["energy_matched"]
    assert abs(shift["energy_ratio_min"] - 1) < 1e-6 and shift["survives"]


def test_controls_with_one_shared_effect_count_as_about_one():
    """Every control's per-prompt effect is one pattern at its own strength: their effective
    number is about 1 (of 36 for effects sharing nothing on 150 prompts). For independent draws
    the null still rests on their count; for controls that are not independent draws it rests
    on the effective number, and no verdict is given."""
    rng = np.random.default_rng(0)
    n, prompts = 40, 150
    pattern = rng.gamma(2.0, size=prompts)
    strength = rng.normal(1.0, 0.2, size=n)
    clean = rng.uniform(0.1, 0.5, size=prompts)
    per = [clean, 3 * pattern + clean] + [s * pattern + clean + 0.01 * rng.normal(size=prompts)
                                         for s in strength]
    names = ["none", "axis", *(f"control-{i}" for i in range(n))]
    frame = [pd.DataFrame({"condition": "clean" if i == 0 else "cut+1",
                           "effect": "clean" if i == 0 else "total", "direction": name,
                           "prompt": np.arange(prompts), "value": v})
             for i, (name, v) in enumerate(zip(names, per, strict=True))]
    base = {"group": None, "layer": None, "kind": "cut", "param": 1.0, "condition": "cut+1"}
    rows = [base | {"condition": "clean", "direction": "none", "effect": "clean",
                    "metric": "kl_bayes", "value": float(clean.mean())}]
    for name, v in zip(names[1:], per[1:], strict=True):
        rows += [base | {"direction": name, "effect": "total", "metric": "kl_bayes",
                         "value": float(v.mean())},
                 base | {"direction": name, "effect": "edit", "metric": "edit_energy",
                         "layer": 0, "value": 0.1}]
    table, per_prompt = pd.DataFrame(rows), pd.concat(frame, ignore_index=True)
    for independent in (True, False):
        e = effects_table(table, 0, per_prompt, independent=independent)
        row = e[e["metric"] == "d_kl_bayes"].iloc[0]
        assert row["n_effective"] < 1.1
        assert row["n_effective_independent"] == pytest.approx(independent_reference(n, prompts))
        assert row["p"] == pytest.approx(1 / 41)
        if independent:
            assert row["n_draws"] == n and row["withheld"] == "" and row["survives"]
        else:
            assert row["n_draws"] < 1.1 and "independent draws" in row["withheld"]
            assert not row["survives"] and row["verdict_withheld"]


def _stats_rows(null: np.ndarray, axis: float) -> pd.DataFrame:
    """An effects table of one cut whose controls' ΔKL are ``null`` (energy matched)."""
    base = {"group": None, "layer": None, "kind": "cut", "param": 1.0, "condition": "cut+1"}
    rows = [base | {"condition": "clean", "direction": "none", "effect": "clean",
                    "metric": "kl_bayes", "value": 0.0}]
    for name, v in [("axis", axis), *((f"control-{i}", v) for i, v in enumerate(null))]:
        rows += [base | {"direction": name, "effect": "total", "metric": "kl_bayes",
                         "value": float(v)},
                 base | {"direction": name, "effect": "edit", "metric": "edit_energy",
                         "layer": 0, "value": 0.2}]
    e = effects_table(pd.DataFrame(rows), 0)
    return e[e["metric"] == "d_kl_bayes"].iloc[0]


def test_a_skewed_control_null_withholds_the_parametric_p():
    rng = np.random.default_rng(3)
    skewed = _stats_rows(rng.lognormal(sigma=1.0, size=240) * 0.01, 0.2)
    assert skewed["shapiro_p"] < 0.05 and np.isnan(skewed["p_z"])
    assert np.isnan(skewed["p_z_holm_primary"]) and not skewed["survives_parametric"]
    assert "not normal" in skewed["parametric_withheld"]
    assert skewed["survives"]  # the permutation p needs no normality
    normal = _stats_rows(rng.normal(0.01, 0.01, size=240), 0.2)
    assert normal["shapiro_p"] >= 0.05 and normal["parametric_withheld"] == ""
    assert normal["p_z"] < 1e-6 and normal["survives_parametric"]


def test_by_default_a_verdict_no_control_reaches_has_a_margin():
    """Three conditions: the default 240 controls let each primary verdict that no control
    reaches survive Holm even if 3 (MARGIN) had; the old 60 left none (3/61 = 0.049)."""
    assert controls_needed(3, margin=MARGIN) == 240 and MARGIN >= 1
    cfg = SteerConfig(cut_fractions=(1.0,), shift_deltas=(1.0,)).sized()
    assert cfg.n_random == 240
    e = effects_table(*_three_at_floor(240))
    prim = e[e["primary"]]
    assert prim["survives"].all() and (prim["n_reached"] == 0).all()
    assert (prim["n_reached_max"] >= MARGIN).all()
    e60 = effects_table(*_three_at_floor(60))
    assert (e60[e60["primary"]]["n_reached_max"] <= 2).all()


def _three_at_floor(n: int) -> tuple[pd.DataFrame, int]:
    rng = np.random.default_rng(4)
    rows = [{"condition": "clean", "kind": "clean", "param": np.nan, "direction": "none",
             "effect": "clean", "metric": "kl_bayes", "group": None, "layer": None,
             "value": 0.0}]
    for key, kind, param in (("cut+1", "cut", 1.0), ("keep_only", "keep_only", np.nan),
                             ("shift+1", "shift", 1.0)):
        base = {"condition": key, "kind": kind, "param": param, "group": None, "layer": None}
        for name, v in [("axis", 1.0), *((f"control-{i}", v) for i, v in
                                         enumerate(rng.normal(0, 0.1, size=n)))]:
            rows += [base | {"direction": name, "effect": "total", "metric": "kl_bayes",
                             "value": v},
                     base | {"direction": name, "effect": "edit", "metric": "edit_energy",
                             "layer": 0, "value": 0.3}]
    return pd.DataFrame(rows), 0


def test_planted_negative_control_is_not_significant_against_the_energy_null():
    """The output depends on the activations only through their energy: the axis is special
    only in carrying much of it. Against norm-matched controls a full cut looks highly
    significant (and their energy differs, so it gets no verdict); against energy-matched ones
    every control removes exactly what the axis removes, so nothing is left to find."""
    x, la = _spread()

    def power(xe: np.ndarray) -> np.ndarray:
        return (xe ** 2).sum(1)

    (energy, _), (norm, _) = (_planted(x, la, null, power, metric="h_model")
                              for null in ("energy", "norm"))
    energy, norm = energy.iloc[0], norm.iloc[0]
    assert norm["p"] == pytest.approx(1 / 41) and norm["at_floor"]
    assert norm["energy_axis"] > 2 * norm["energy_null"] and "energy" in norm["withheld"]
    assert energy["p"] > 0.2 and not energy["at_floor"] and not energy["survives"]
    assert energy["null_std"] < 1e-6 * abs(energy["axis"])
    assert energy["energy_axis"] == pytest.approx(energy["energy_null"], rel=1e-6)


def test_energy_null_matches_the_energy_removed_where_edits_apply_the_variance_null_not():
    """The axis is fitted on final-token rows, but the edit reaches every position, whose
    activations share an offset. Controls matched in the fitted rows' centred variance remove a
    different energy there; energy-matched ones remove the axis' to 1 %."""
    rng = np.random.default_rng(3)
    d = 48
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    var = np.r_[4.0, np.linspace(8.0, 0.5, d - 1)]
    every = rng.normal(size=(3000, d)) * np.sqrt(var) @ q.T + 1.5 * q[:, 3]  # all positions
    fitted = every[::10] - every[::10].mean(0)  # the final-token rows the axis was fitted on
    la = _layer_axis(q[:, 0], fitted)
    moments = EnergyMoments.of(every)
    (cut,) = Condition("cut", 1.0).interventions(["s"], [torch.as_tensor(la.unit)], [1.0], "all")
    axis_energy = edit_energy(moments, cut)
    for null, close in (("energy", True), ("orthonormal", True), ("variance", False)):
        dirs = edit_directions({0: la}, {0: fitted}, {0: moments}, null, 40, seed=0)
        removed = []
        for _, (dvec,) in list(dirs)[1:]:
            (iv,) = Condition("cut", 1.0).interventions(["s"], [dvec], [1.0], "all")
            removed.append(edit_energy(moments, iv))
        rel = np.abs(np.array(removed) / axis_energy - 1)
        assert (rel.max() < 0.01) == close, (null, rel.max())
        c = dirs.controls[0]
        assert c.energy_ratio_min == pytest.approx(min(removed) / axis_energy, rel=1e-6)
        assert c.independent == (null != "orthonormal")
