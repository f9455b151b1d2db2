"""The verdict table of a monitored run: the two-timescale read-out (pooled over layers, by
the settle-step rule of :mod:`.timescales`), the two alignments and the values' PC1 share."""

from __future__ import annotations

import pandas as pd

from ...kit.findings import Finding
from ...kit.numbers import count, sig
from .timescales import FRAME_METRIC, LEVEL, layer_means, phase_means, settle_steps

#: the alignments and the specialisation read in the verdict table: metric -> claim
_CLAIMS = {
    "score_follow": "score updates follow advantage (Paper II monitor: cosine of the actual "
                    "change of the centred scores with the routing law's −∂L/∂s)",
    "value_follow": "value updates follow the responsibility-weighted error (Paper II "
                    "monitor: cosine of the actual value change with −Σ_i α_ij u_i)",
}
_NO_TEST = "the monitor computes no random-direction control and no test"


def findings(tidy: pd.DataFrame, level: float = LEVEL) -> list[Finding]:
    """The verdict table of a monitored run: the two-timescale read-out (pooled over layers,
    decided by the settle-step rule of the module doc), the two alignments (mean over heads,
    layers and intervals; no criterion in the monitor) and the values' PC1 share."""
    if tidy.empty or not (tidy["metric"] == FRAME_METRIC).any():
        return [Finding("the frame settles before the values (Paper II two-timescale)", None,
                        undefined="the monitor logged no intervals")]
    st = settle_steps(tidy, level)
    pooled = st[st["layer"] == "all"].iloc[0]
    per_layer = st[st["layer"] != "all"]
    a, v, lr = (pooled["attention_settle_step"], pooled["value_settle_step"],
                pooled["lr_settle_step"])
    first = pooled["frame_first"]
    layer_first = [None if pd.isna(x) else x for x in per_layer["frame_first"]]
    lr_text = ("the log has no learning rate" if pd.isna(lr) else
               f"the learning-rate schedule reaches {level:.0%} of its path at step "
               f"{count(lr)}: a part settling there may only follow the schedule")
    out = [Finding(
        f"the attention frame settles before the values (Paper II two-timescale; monitor "
        f"rule, pooled over layers; value: the step at which the patterns' path length "
        f"reaches {level:.0%})", None if pd.isna(a) else float(a),
        control=f"values reach {level:.0%} at step {count(v)}",
        survives=None if pd.isna(first) else bool(first),
        evidence=f"frame first in {sum(x is not None and bool(x) for x in layer_first)} of "
                 f"{len(per_layer)} layers; {lr_text}",
        undefined="no settle step")]
    ph = phase_means(tidy).set_index(["layer", "metric"])
    for metric, claim in _CLAIMS.items():
        if ("all", metric) not in ph.index:
            continue
        r = ph.loc[("all", metric)]
        mean = float(layer_means(tidy, metric)["all"].mean())
        out.append(Finding(
            f"{claim}, mean over heads, layers and intervals", mean,
            control="0: a change unrelated to the prediction", survives=None,
            evidence=f"early / middle / late thirds {sig(r['early'])} / {sig(r['middle'])} / "
                     f"{sig(r['late'])}; {_NO_TEST}",
            undefined="no finite cosine (a head that did not move)"))
    if ("all", "value_pc1") in ph.index:
        r = ph.loc[("all", "value_pc1")]
        out.append(Finding(
            "the values specialise (PC1 share of each head's value vectors, mean over heads "
            "and layers, late third)", float(r["late"]),
            control=f"early third {sig(r['early'])}", survives=None,
            evidence=f"middle third {sig(r['middle'])}; the monitor has no criterion for "
                     "specialisation", undefined="no value vectors read"))
    return out
