"""Figure and report of the positional priors of a Llama-style wind tunnel (ALiBi, BAM, NoPE):
per layer, the bias B_h(d) each head adds to the scores at distance d = i − j (score units;
BAM's formula without the model's per-head offset) and the prior over distance it implies for
a query that sees D + 1 keys (softmax over d = 0..D), one line per head; and a table of BAM's
parameters (θα, θβ, μ, exp θα, the SSMax factor σ) with each prior's mode and mean distance.
The numbers come from :func:`windtunnel.prior_readout.read_priors`.

A readout is a description, not a test: :func:`prior_findings` gives its verdict rows -- how
far back the heads' priors look and how many prefer the nearest keys, each beside the flat
prior of NoPE -- with no verdict.
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...windtunnel.prior_readout import PriorReadout
from ..kit.findings import Finding
from ..kit.html import COLORS, html_report
from ..kit.numbers import sig

#: why a readout has no verdict
NO_TEST = "a readout of the weights, not a test: no criterion"


def prior_findings(readout: PriorReadout) -> list[Finding]:
    """The mean distance the heads' priors expect and how many peak at distance 0, each beside
    the flat prior (NoPE) over the same distances; no verdict (a readout).

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.architectures import build_model
        >>> from bayesgeom.windtunnel.prior_readout import read_priors
        >>> m = build_model(make_task("bijection", V=6), "llama-alibi", "tiny")
        >>> rows = prior_findings(read_priors(m, max_distance=16))
        >>> [r.survives for r in rows], rows[0].control
        ([None, None], 'a flat prior (NoPE) over 0..16: mean 8')
    """
    p = readout.params_frame()
    D = int(readout.distances[-1])
    local = int((p["prior_mode"] == 0).sum())
    return [
        Finding(f"{readout.scheme}: the heads' priors favour nearby keys (mean distance of the "
                f"implied prior p_h(d) over d = 0..{D}, mean over {len(p)} heads)",
                float(p["prior_mean"].mean()), unit="tokens",
                control=f"a flat prior (NoPE) over 0..{D}: mean {sig(D / 2)}",
                evidence=f"heads range {sig(p['prior_mean'].min())}–"
                         f"{sig(p['prior_mean'].max())} tokens; {NO_TEST}"),
        Finding(f"{readout.scheme}: heads whose prior peaks at distance 0 (the nearest key)",
                local, unit=f"of {len(p)} heads",
                control="a flat prior (NoPE) has no peak", evidence=NO_TEST)]


def prior_figure(readout: PriorReadout) -> go.Figure:
    """Bias (left) and implied prior (right) against distance, one row per layer (one row in
    all for a shared prior without SSMax), one colour per head.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.architectures import build_model
        >>> from bayesgeom.windtunnel.prior_readout import read_priors
        >>> m = build_model(make_task("bijection", V=6), "llama-alibi", "tiny")
        >>> fig = prior_figure(read_priors(m, max_distance=16))
        >>> len(fig.data)  # 2 layers x 2 heads x (bias, prior)
        8
    """
    rows = 1 if readout.shared and not readout.ssmax else readout.bias.shape[0]
    names = [f"layer {L}" if rows > 1 else "all layers" for L in range(rows)]
    fig = make_subplots(rows=rows, cols=2, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[f"{n}: {t}" for n in names
                                        for t in ("bias B_h(d)", "implied prior p_h(d)")])
    H = readout.bias.shape[1]
    for L in range(rows):
        for h in range(H):
            color = COLORS[h % len(COLORS)]
            label = (f"head {h + 1}: θβ={readout.theta_beta[L, h]:.2f}, "
                     f"exp θα={readout.scale[L, h]:.3g}")
            for col, y in ((1, readout.bias[L, h]), (2, readout.prior[L, h])):
                fig.add_trace(go.Scatter(
                    x=readout.distances, y=y, mode="lines", line={"color": color},
                    name=f"head {h + 1}", legendgroup=f"head {h + 1}",
                    showlegend=L == 0 and col == 1, hovertext=label), row=L + 1, col=col)
    D = int(readout.distances[-1])
    fig.update_xaxes(title_text="distance i − j (tokens)", row=rows)
    fig.update_layout(height=260 * rows + 120, template="plotly_white",
                      title=f"{readout.scheme} priors over distance 0..{D}"
                            + (" (SSMax: bias × σ log(D + 1))" if readout.ssmax else ""))
    return fig


def write_prior_report(readout: PriorReadout, path: Path, title: str = "Positional priors",
                       manifest: dict | None = None) -> Path:
    """One offline HTML file: the verdict rows (:func:`prior_findings`), the figure and the
    parameter table; returns ``path``.

    Example:
        >>> from pathlib import Path
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.architectures import build_model
        >>> from bayesgeom.windtunnel.prior_readout import read_priors
        >>> m = build_model(make_task("bijection", V=6), "llama-bam", "tiny")
        >>> write_prior_report(read_priors(m, 8), Path("priors.html")).stat().st_size > 1000
        True
    """
    return html_report(path, title, prior_findings(readout), [
        ("Bias and implied prior per head", prior_figure(readout),
         "Look for: how fast each head's prior (right) falls with distance -- a steep fall is "
         "a local head, a flat line attends evenly (NoPE); one colour per head, the same in "
         "both panels and every layer."),
        ("Parameters (BAM's; ALiBi as θα = log m_h, θβ = 1; NoPE as θβ = 0)",
         readout.params_frame()),
    ], manifest)
