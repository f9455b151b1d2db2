"""The steering dose–response figure: one column per kind of edit the run made, the primary
metric on top, every panel drawn (a single dose gets a control bar, several a band)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesgeom.analyses.steer.figures import dose_response


def _table(conds: list[tuple[str, str, float]], n_controls: int = 5) -> pd.DataFrame:
    """A tidy steering table: clean rows and, per condition, the axis and the controls."""
    rng = np.random.default_rng(0)
    metrics = ("kl_bayes", "kl_clean", "h_model")
    rows = [dict(condition="clean", kind="clean", param=np.nan, direction="clean",
                 effect="clean", metric=m, group=None, value=0.5) for m in metrics]
    for cond, kind, param in conds:
        for d in ["axis", *(f"r{i}" for i in range(n_controls))]:
            rows += [dict(condition=cond, kind=kind, param=param, direction=d, effect="total",
                          metric=m, group=None, value=float(rng.uniform(0, 1)))
                     for m in metrics]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("conds, titles", [
    ([("cut+1", "cut", 1.0), ("keep_only", "keep_only", np.nan)],
     ["full cut", "keep only the axis"]),
    ([("cut+0.5", "cut", 0.5), ("cut+1", "cut", 1.0), ("shift-1", "shift", -1.0),
      ("shift+1", "shift", 1.0)], ["cuts", "shifts"]),
    ([("shift+1", "shift", 1.0)], ["shift +1σ"]),
])
def test_every_panel_is_an_edit_the_run_made(conds, titles):
    fig = dose_response(_table(conds))
    assert [a.text for a in fig.layout.annotations if a.text] == titles
    n = len(titles)
    axes = {f"x{'' if i == 1 else i}" for i in range(1, 2 * n + 1)}
    drawn = {t.xaxis for t in fig.data}
    assert drawn == axes  # no empty panel
    for t in fig.data:  # controls and axis in every panel, with the axis' markers
        assert len(t.x) >= 1 and np.isfinite(np.asarray(t.y, float)).all()
    assert fig.layout.yaxis.title.text == "Δ KL(Bayes ‖ model) (bits)"
    single = [t for t in fig.data if t.name.startswith("controls") and t.error_y.array
              is not None]
    several = [t for t in fig.data if t.name.startswith("controls") and t.fill == "toself"]
    n_single = sum(len({p for c, k, p in conds if k == kind}) == 1 or kind == "keep_only"
                   for kind in dict.fromkeys(k for _, k, _ in conds))
    assert len(single) == 2 * n_single and len(several) == 2 * (n - n_single)


def test_the_control_range_holds_the_controls():
    t = _table([("cut+1", "cut", 1.0)], n_controls=200)
    fig = dose_response(t)
    bar = next(t for t in fig.data if t.name.startswith("controls") and t.xaxis == "x")
    ctrl = t[(t.metric == "kl_bayes") & t.direction.str.startswith("r")]["value"] - 0.5
    lo, hi = bar.y[0] - bar.error_y.arrayminus[0], bar.y[0] + bar.error_y.array[0]
    assert lo == pytest.approx(ctrl.quantile(0.05)) and hi == pytest.approx(ctrl.quantile(0.95))


def test_a_run_without_edits_says_so():
    fig = dose_response(_table([]))
    assert "no edited pass" in fig.layout.title.text
