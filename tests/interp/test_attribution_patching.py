"""Attribution patching: equal to exact activation patching where the score is linear in the
patched activation (the last block's output read through the head with the final norm removed),
different but correlated on a normal model, and its attn.L.z gradient equal to the one
:mod:`interp.attention_taps` reads from the attention kernel."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import spearmanr

from bayesgeom import interp
from bayesgeom.interp import (
    activation_patch,
    attribution_patch,
    capture,
    cell_grid,
    logit_diff_score,
    posterior_kl_score,
)
from bayesgeom.interp.attention_taps import attention_gradients

GOOD, BAD = 5, 7
CLEAN = [[11, 40, 52, 63, 71, 90], [12, 33, 44, 57], [14, 22, 35, 46, 58, 69, 80]]
CORRUPT = [[11, 40, 52, 88, 71, 90], [12, 39, 44, 57], [15, 22, 35, 46, 58, 69, 80]]


def test_exact_where_the_score_is_linear_in_the_activation(tiny_models):
    m = interp.load(tiny_models["llama"].path)
    m.hf.model.norm = torch.nn.Identity()  # logits = lm_head(resid_post.-1): linear
    cells = cell_grid(m, ["resid_post", "mlp_out"], layers=[-1], positions=[None, 0, 2, -1])
    score = logit_diff_score(GOOD, BAD)
    exact = activation_patch(m, CORRUPT, CLEAN, cells, score, batch_size=2)
    approx = attribution_patch(m, CORRUPT, CLEAN, cells, score, batch_size=2)
    assert approx.method == "attribution" and approx.cells == exact.cells
    torch.testing.assert_close(approx.values, exact.values, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(approx.target, exact.target)
    torch.testing.assert_close(approx.source, exact.source)
    assert exact.effect()[0].abs().min() > 1e-3  # the patches move the score


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_differs_but_correlates_on_a_normal_model(family, tiny_models):
    m = interp.load(tiny_models[family].path)
    cells = [*cell_grid(m, "attn.z", heads=True, positions="each", length=4),
             *cell_grid(m, ["resid_pre", "mlp_out"], positions="each", length=4)]
    score = logit_diff_score(GOOD, BAD)
    exact = activation_patch(m, CORRUPT, CLEAN, cells, score).effect().flatten()
    approx = attribution_patch(m, CORRUPT, CLEAN, cells, score).effect().flatten()
    assert (approx - exact).abs().max() > 1e-3  # a first-order estimate, not the patch
    moved = exact.abs() > 1e-4
    rho = spearmanr(approx[moved].numpy(), exact[moved].numpy()).statistic
    assert rho > 0.6, rho


def test_several_metrics_and_the_posterior_score(tiny_models):
    m = interp.load(tiny_models["llama"].path)
    cells = cell_grid(m, ["resid_pre", "attn.v"], heads=True, positions=[1])
    p_star = torch.softmax(torch.randn(3, 1, 4, generator=torch.Generator().manual_seed(0)), -1)
    score = interp.combine_scores(logit_diff_score(GOOD, BAD),
                                  posterior_kl_score(p_star, [5, 6, 7, 8]))
    both = attribution_patch(m, CORRUPT, CLEAN, cells, score, batch_size=2)
    alone = attribution_patch(m, CORRUPT, CLEAN, cells, logit_diff_score(GOOD, BAD))
    assert both.metrics == ("logit_diff", "kl_bits", "entropy_bits", "entropy_abs_err_bits")
    torch.testing.assert_close(both.value("logit_diff"), alone.value(), atol=1e-6, rtol=1e-6)
    assert both.effect("kl_bits").abs().max() > 1e-5


def test_the_z_gradient_matches_the_attention_kernel_taps(tiny_models):
    m = interp.load(tiny_models["llama"].path)
    target, source = CORRUPT[:1], CLEAN[:1]
    cells = cell_grid(m, "attn.z", heads=True, positions="each", length=6)
    est = attribution_patch(m, target, source, cells, logit_diff_score(GOOD, BAD)).effect()
    batch = m.batch(target)

    def loss() -> torch.Tensor:
        z = m.backend.forward(batch)[:, -1]
        return (z[:, GOOD] - z[:, BAD]).sum()

    taps = attention_gradients(m, batch, loss_fn=loss)
    z_s = capture(m, source, "attn.*.z", "all", progress=False)
    z_t = capture(m, target, "attn.*.z", "all", progress=False)
    ref = torch.zeros(len(cells), dtype=torch.float64)
    for i, c in enumerate(cells):
        g = taps.layers[c.layer].z_grad[0, c.head, c.position]  # heads first: [H, T, dh]
        diff = (z_s[c.site][c.position] - z_t[c.site][c.position])[c.head]
        ref[i] = diff.double() @ g.double()
    torch.testing.assert_close(est[:, 0], ref, atol=1e-5, rtol=1e-4)
    assert ref.abs().max() > 1e-3
