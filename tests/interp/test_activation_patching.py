"""Activation patching against an independent implementation (plain torch hooks on the Hugging
Face modules, one pair at a time, no padding) on two families; a self-patch changes nothing bit
for bit; both directions; batching, padding and the resumed passes change nothing; bad input is
one line."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import PatchCell, activation_patch, cell_grid, logit_diff_score, patch_roles
from bayesgeom.interp.errors import PositionError, PromptError, UnknownSiteError

GOOD, BAD = 5, 7
#: (clean, corrupt) token pairs of three lengths: one token changed per pair
PAIRS = [([11, 40, 52, 63, 71, 90], [11, 40, 52, 88, 71, 90]),
         ([12, 33, 44, 57], [12, 39, 44, 57]),
         ([14, 22, 35, 46, 58, 69, 80], [15, 22, 35, 46, 58, 69, 80])]
CLEAN = [c for c, _ in PAIRS]
CORRUPT = [k for _, k in PAIRS]


def _modules(hf: torch.nn.Module, family: str, layer: int) -> dict[str, torch.nn.Module]:
    if family == "llama":
        block = hf.model.layers[layer]
        return {"block": block, "out_proj": block.self_attn.o_proj, "mlp": block.mlp}
    block = hf.gpt_neox.layers[layer]
    return {"block": block, "out_proj": block.attention.dense, "mlp": block.mlp}


def _hooked_logits(hf, family, ids, cell, store, replace):
    """Last-token logits of one unpadded prompt, reading (``replace`` False) or writing the
    cell's activation with plain module hooks."""
    mods = _modules(hf, family, cell.layer)
    kind = cell.kind
    n_heads = hf.config.num_attention_heads
    pos = slice(None) if cell.position is None else cell.position

    def edit(x):
        if kind == "attn.z":
            x = x.unflatten(-1, (n_heads, -1))
        if not replace:
            store["x"] = x.detach().clone()
            return None
        y = x.clone()
        if cell.head is None:
            y[:, pos] = store["x"][:, pos]
        else:
            y[:, pos, cell.head] = store["x"][:, pos, cell.head]
        return y.flatten(-2) if kind == "attn.z" else y

    if kind == "resid_pre":
        def pre(_m, args, kwargs):
            x = args[0] if args else kwargs["hidden_states"]
            y = edit(x)
            if y is None:
                return None
            return ((y, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": y})
        h = mods["block"].register_forward_pre_hook(pre, with_kwargs=True)
    elif kind == "attn.z":
        def zpre(_m, args):
            y = edit(args[0])
            return None if y is None else (y, *args[1:])
        h = mods["out_proj"].register_forward_pre_hook(zpre)
    else:
        module = mods["out_proj" if kind == "attn_out" else "mlp"]

        def post(_m, _a, out):
            x = out[0] if isinstance(out, tuple) else out
            y = edit(x)
            if y is None:
                return None
            return (y, *out[1:]) if isinstance(out, tuple) else y
        h = module.register_forward_hook(post)
    try:
        with torch.no_grad():
            return hf(input_ids=torch.tensor([ids])).logits[0, -1]
    finally:
        h.remove()


def _reference(hf, family, target, source, cell):
    """[N] logit differences with ``cell`` patched, pair by pair."""
    out = []
    for t, s in zip(target, source, strict=True):
        store: dict = {}
        _hooked_logits(hf, family, s, cell, store, replace=False)
        z = _hooked_logits(hf, family, t, cell, store, replace=True)
        out.append(float(z[GOOD] - z[BAD]))
    return torch.tensor(out, dtype=torch.float64)


@pytest.fixture(scope="module")
def models(tiny_models):
    return {f: interp.load(tiny_models[f].path) for f in ("llama", "gpt_neox")}


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_matches_plain_module_hooks(family, models):
    m = models[family]
    target, source = patch_roles(CLEAN, CORRUPT)  # denoising
    cells = [
        *cell_grid(m, ["resid_pre", "attn_out", "mlp_out"], positions=[0, 1, -1]),
        *cell_grid(m, ["resid_pre.1", "attn_out.1", "mlp_out.0"]),
        *cell_grid(m, "attn.z", heads=True, positions=[1, -1], layers=[0]),
        *cell_grid(m, "attn.1.z", heads=[2]),
        PatchCell("attn.1.z", 1),
    ]
    r = activation_patch(m, target, source, cells, logit_diff_score(GOOD, BAD), batch_size=2)
    assert r.values.shape == (len(cells), 3, 1) and r.metrics == ("logit_diff",)
    moved = 0
    for i, c in enumerate(cells):
        ref = _reference(m.hf, family, target, source, c)
        torch.testing.assert_close(r.value()[i], ref, atol=2e-5, rtol=1e-5, msg=c.label)
        moved += int((r.effect()[i].abs() > 1e-4).any())
    assert moved > len(cells) // 3  # the patches do something, so the agreement says something


def test_self_patch_is_bit_identical(models):
    m = models["llama"]
    cells = [*cell_grid(m, ["resid_pre", "resid_post", "attn_out", "mlp_out"], positions=[None, 2]),
             *cell_grid(m, ["attn.q", "attn.k", "attn.v", "attn.z"], heads=True, positions=[-1])]
    r = activation_patch(m, CORRUPT, CORRUPT, cells, logit_diff_score(GOOD, BAD), batch_size=3)
    assert torch.equal(r.values, r.target[None].expand_as(r.values))
    assert torch.equal(r.target, r.source)


def test_both_directions_reach_the_other_run(models):
    m = models["gpt_neox"]
    score = logit_diff_score(GOOD, BAD)
    for direction in ("denoising", "noising"):
        target, source = patch_roles(CLEAN, CORRUPT, direction)
        r = activation_patch(m, target, source, [PatchCell("resid_pre.0", 0)], score)
        # every input embedding replaced: the target becomes the source, bit for bit
        assert torch.equal(r.values[0], r.source)
        assert (r.target - r.source).abs().min() > 1e-4
    clean = activation_patch(m, CLEAN, CLEAN, [PatchCell("resid_pre.0", 0)], score).target
    assert torch.equal(r.target, clean)  # noising's target is the clean run


def test_batching_padding_and_resumption_change_nothing(models):
    m = models["llama"]
    cells = cell_grid(m, ["resid_pre", "mlp_out", "attn.v"], heads=True, positions=[1])
    score = logit_diff_score(GOOD, BAD)
    full = activation_patch(m, CORRUPT, CLEAN, cells, score, batch_size=3, resume=False)
    one = activation_patch(m, CORRUPT, CLEAN, cells, score, batch_size=1)
    torch.testing.assert_close(one.values, full.values, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(one.target, full.target, atol=1e-5, rtol=1e-5)
    batches = activation_patch(m, m.batch(CORRUPT), m.batch(CLEAN), cells, score, batch_size=3)
    assert torch.equal(batches.values, activation_patch(m, CORRUPT, CLEAN, cells, score,
                                                        batch_size=3).values)


def test_read_positions_and_tidy_frame(models):
    m = models["llama"]
    cells = cell_grid(m, "attn.z", heads=True, positions=[0, 1], layers=[-1])
    reverse = interp.PairScore(lambda z: (z[..., BAD] - z[..., GOOD]).mean(-1), names=("rev",))
    score = interp.combine_scores(logit_diff_score(GOOD, BAD), reverse)
    r = activation_patch(m, CORRUPT, CLEAN, cells, score, read_positions=[1, -1])
    assert r.metrics == ("logit_diff", "rev")
    torch.testing.assert_close(r.values[..., 0], -r.values[..., 1])
    z = interp.read_logits(m, CORRUPT, read_positions=[1, -1])  # [3, 2, V]
    torch.testing.assert_close(r.target[:, 0], (z[..., GOOD] - z[..., BAD]).mean(-1).double())
    df = r.to_frame()
    assert len(df) == len(cells) * 3
    assert list(df.columns[:5]) == ["site", "layer", "head", "position", "pair"]
    assert set(df["head"]) == {0, 1, 2, 3} and set(df["site"]) == {"attn.1.z"}
    assert {"logit_diff", "rev", "target_logit_diff", "source_rev"} <= set(df.columns)
    assert df["logit_diff"].tolist() == r.value("logit_diff").flatten().tolist()


def test_wind_tunnel_checkpoint(tiny_models, family_prompts):
    m = interp.load(tiny_models["windtunnel"].path)
    prompts = family_prompts["windtunnel"][:2]
    corrupt = [list(p) for p in prompts]
    corrupt[0][3], corrupt[1][2] = corrupt[1][2], corrupt[0][3]
    cells = cell_grid(m, ["resid_pre", "attn.z"], heads=True, positions="each", length=4)
    r = activation_patch(m, corrupt, prompts, cells, logit_diff_score(1, 2))
    same = activation_patch(m, prompts, prompts, cells, logit_diff_score(1, 2))
    assert torch.equal(same.values, same.target[None].expand_as(same.values))
    assert r.values.shape == (len(cells), 2, 1) and torch.isfinite(r.values).all()


def test_bad_input_is_one_line(models):
    m = models["llama"]
    score = logit_diff_score(GOOD, BAD)
    cell = [PatchCell("resid_pre.1", 1, position=1)]
    cases = [
        (UnknownSiteError, lambda: cell_grid(m, "attn.0.zz")),
        (UnknownSiteError, lambda: cell_grid(m, "attn.z", heads=[4])),
        (UnknownSiteError, lambda: cell_grid(m, "attn.v", heads=[2])),  # 2 kv heads
        (UnknownSiteError, lambda: activation_patch(m, CLEAN, CORRUPT,
                                                    [PatchCell("mlp_out.5", 5)], score)),
        (PositionError, lambda: activation_patch(m, CLEAN, CORRUPT,
                                                 [PatchCell("resid_pre.1", 1, position=4)],
                                                 score)),
        (PositionError, lambda: activation_patch(m, CLEAN, [c[:-1] for c in CORRUPT], cell,
                                                 score)),
        (PromptError, lambda: activation_patch(m, [], [], cell, score)),
        (PromptError, lambda: activation_patch(m, CLEAN, CORRUPT[:2], cell, score)),
        (UnknownSiteError, lambda: activation_patch(m, CLEAN, CORRUPT, [], score)),
        (PositionError, lambda: activation_patch(m, CLEAN, CORRUPT, cell, score,
                                                 read_positions=[9])),
        (interp.InterpError, lambda: activation_patch(m, CLEAN, CORRUPT, cell,
                                                      lambda z: z.sum())),
    ]
    for err, call in cases:
        with pytest.raises(err) as info:
            call()
        assert "\n" not in str(info.value), str(info.value)
