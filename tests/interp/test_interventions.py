"""Interventions: each edit's algebra at the hooked site, positions and heads, removal on exit
(nested, and when the body raises), nil effects reported, shape errors, control directions."""

from __future__ import annotations

import warnings

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import AddVector, KeepOnly, ProjectOut, ShiftAlong, capture, intervene
from bayesgeom.interp.errors import (
    DirectionShapeError,
    InterpError,
    NilInterventionError,
    NilInterventionWarning,
)


def _unit(n: int, seed: int) -> torch.Tensor:
    v = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    return v / v.norm()


def _hooks(m: torch.nn.Module) -> int:
    return sum(len(x._forward_hooks) + len(x._forward_pre_hooks) for x in m.modules())


def test_project_out_keep_only_and_shift_act_on_the_hooked_site(llama, prompts):
    u = _unit(32, 0)
    base = capture(llama, prompts, ["resid_post.0"], "all", progress=False)["resid_post.0"]
    with intervene(llama, ProjectOut("resid_post.0", u)):
        x = capture(llama, prompts, ["resid_post.0"], "all", progress=False)["resid_post.0"]
    assert (x @ u).abs().max() < 1e-5
    torch.testing.assert_close(x, base - (base @ u)[:, None] * u, atol=1e-5, rtol=0)
    with intervene(llama, KeepOnly("resid_post.0", 3 * u)):
        x = capture(llama, prompts, ["resid_post.0"], "all", progress=False)["resid_post.0"]
    torch.testing.assert_close(x, (base @ u)[:, None] * u, atol=1e-5, rtol=0)
    with intervene(llama, ShiftAlong("resid_post.0", u, delta=2.0, sigma=0.5)):
        x = capture(llama, prompts, ["resid_post.0"], "all", progress=False)["resid_post.0"]
    torch.testing.assert_close(x @ u, base @ u + 1.0, atol=1e-5, rtol=0)


def test_positions_and_heads_limit_the_edit(llama, prompts):
    sites = ["attn.1.v"]
    base = capture(llama, prompts, sites, "all", progress=False)["attn.1.v"]
    last = capture(llama, prompts, sites, "last", progress=False)
    is_last = torch.zeros(len(base), dtype=torch.bool)
    is_last[torch.cumsum(torch.tensor([len(t) for t in llama.encode(prompts)[0]]), 0) - 1] = True
    vec = torch.ones(8)
    with intervene(llama, AddVector("attn.1.v", vec, heads=[1], positions="last")) as h:
        x = capture(llama, prompts, sites, "all", progress=False)["attn.1.v"]
    assert h.effects[0].rows == len(prompts)
    torch.testing.assert_close(x[~is_last], base[~is_last])
    torch.testing.assert_close(x[is_last, 0], base[is_last, 0])
    torch.testing.assert_close(x[is_last, 1], last["attn.1.v"][:, 1] + 1)


def test_interventions_apply_to_layer_sets(llama, prompts):
    base = llama.logits(prompts)
    with intervene(llama, ProjectOut("resid_post.*", _unit(32, 1), positions=[0])) as h:
        changed = llama.logits(prompts)
    assert [e.site for e in h.effects] == ["resid_post.0", "resid_post.1"]
    assert (changed - base).abs().max() > 1e-4


def test_hooks_are_removed_when_nested_and_on_exceptions(llama, prompts):
    n0, base = _hooks(llama.hf), llama.logits(prompts)
    u = _unit(32, 2)
    with (pytest.raises(RuntimeError, match="boom"),
          intervene(llama, ProjectOut("resid_post.0", u)),
          intervene(llama, AddVector("mlp_out.1", u))):
        assert _hooks(llama.hf) == n0 + 2
        raise RuntimeError("boom")
    assert _hooks(llama.hf) == n0
    with intervene(llama, ProjectOut("resid_post.0", u)):
        with intervene(llama, AddVector("mlp_out.1", u)):
            both = llama.logits(prompts)
        outer_only = llama.logits(prompts)
        assert _hooks(llama.hf) == n0 + 1
    assert not torch.equal(both, outer_only)
    assert _hooks(llama.hf) == n0 and torch.equal(llama.logits(prompts), base)


def test_nil_effects_are_reported(llama, prompts):
    with (pytest.warns(NilInterventionWarning, match=r"max \|change\| 0"),
          intervene(llama, AddVector("resid_post.0", torch.zeros(32)))):
        llama.logits(prompts)
    with (pytest.warns(NilInterventionWarning, match="matched no positions"),
          intervene(llama, AddVector("resid_post.0", torch.ones(32), positions=[60]))):
        llama.logits(prompts)
    with (pytest.warns(NilInterventionWarning, match="never ran"),
          intervene(llama, AddVector("resid_post.0", torch.ones(32)))):
        pass
    u = _unit(32, 3)
    with pytest.raises(NilInterventionError), intervene(
        llama, ProjectOut("resid_post.0", u), ProjectOut("resid_pre.1", u), strict=True
    ) as h:  # resid_pre.1 is resid_post.0, whose u-component is already gone
        llama.logits(prompts)
    assert [e.nil() for e in h.effects] == [False, True]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with intervene(llama, AddVector("resid_post.0", torch.ones(32))):
            llama.logits(prompts)


def test_bad_directions_are_clear_errors(llama):
    with pytest.raises(DirectionShapeError, match=r"must have shape \[32\], got \[31\]"):
        intervene(llama, AddVector("resid_post.0", torch.ones(31)))
    with pytest.raises(DirectionShapeError, match=r"\[16\] or \[2, 8\]"):
        intervene(llama, ProjectOut("attn.0.v", torch.ones(32)))
    with pytest.raises(DirectionShapeError, match="zero norm"):
        intervene(llama, ProjectOut("resid_post.0", torch.zeros(32)))
    with pytest.raises(DirectionShapeError, match=r"heads 0\.\.1"):
        intervene(llama, ProjectOut("attn.0.k", torch.ones(8), heads=[2]))
    with pytest.raises(InterpError, match="read-only"):
        intervene(llama, AddVector("attn.0.pattern", torch.ones(4)))
    assert _hooks(llama.hf) == 0


def test_random_controls_match_the_axis():
    axis = torch.randn(3, 64, generator=torch.Generator().manual_seed(0))
    c = interp.random_controls(axis, n=4, seed=7)
    assert c.shape == (4, 3, 64)
    flat, a = c.flatten(1).double(), axis.flatten().double()
    torch.testing.assert_close(flat.norm(dim=1), a.norm().expand(4), rtol=1e-6, atol=0)
    assert (flat @ a).abs().max() < 1e-4 * a.norm() ** 2
    assert torch.equal(c, interp.random_controls(axis, n=4, seed=7))
    assert not torch.equal(c, interp.random_controls(axis, n=4, seed=8))


def test_projection_std_is_the_spread_along_the_direction():
    g = torch.Generator().manual_seed(0)
    u = _unit(16, 4)
    x = torch.randn(500, 16, generator=g) * 0.1 + torch.randn(500, 1, generator=g) * 2 * u
    assert interp.projection_std(x, 5 * u) == pytest.approx(2.0, rel=0.1)


def test_project_out_fraction_removes_that_share_of_the_component(llama, prompts):
    u = _unit(32, 3)
    base = capture(llama, prompts, ["resid_post.0"], "all", progress=False)["resid_post.0"]
    for f in (0.25, 1.0, 2.0):
        with intervene(llama, ProjectOut("resid_post.0", u, fraction=f)):
            x = capture(llama, prompts, ["resid_post.0"], "all", progress=False)["resid_post.0"]
        torch.testing.assert_close(x @ u, (1 - f) * (base @ u), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.norm(dim=-1), base.norm(dim=-1))  # f = 2: a reflection
    with pytest.raises(DirectionShapeError, match="finite"):
        ProjectOut("resid_post.0", u, fraction=float("nan"))


def test_a_direction_edit_applies_any_plain_edit_function(llama, prompts):
    """DirectionEdit(site, direction, operation) runs the plain function at the site; the named
    edits are its special cases and give the same activations."""
    from bayesgeom.interp import DirectionEdit, edits

    u = _unit(32, 3)
    base = capture(llama, prompts, ["resid_post.1"], "all", progress=False)["resid_post.1"]
    for named, plain, expect in (
            (ProjectOut("resid_post.1", u, fraction=0.5),
             DirectionEdit("resid_post.1", u, edits.project_out, fraction=0.5),
             base - 0.5 * (base @ u)[:, None] * u),
            (ShiftAlong("resid_post.1", u, delta=2.0, sigma=0.25),
             DirectionEdit("resid_post.1", u, edits.shift, amount=0.5), base + 0.5 * u)):
        with intervene(llama, named):
            a = capture(llama, prompts, ["resid_post.1"], "all", progress=False)["resid_post.1"]
        with intervene(llama, plain):
            b = capture(llama, prompts, ["resid_post.1"], "all", progress=False)["resid_post.1"]
        torch.testing.assert_close(a, b, atol=0, rtol=0)
        torch.testing.assert_close(a, expect, atol=1e-5, rtol=0)

    def flip(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:  # a user's own edit
        return x - 2 * edits.dot(x, u) * u

    with intervene(llama, DirectionEdit("resid_post.1", u, flip)):
        x = capture(llama, prompts, ["resid_post.1"], "all", progress=False)["resid_post.1"]
    torch.testing.assert_close(x @ u, -(base @ u), atol=1e-5, rtol=0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_edit_parameters_are_refused(bad):
    from bayesgeom.interp import DirectionEdit, edits

    u = _unit(32, 0)
    for make in (lambda: ProjectOut("resid_post.0", u, fraction=bad),
                 lambda: ShiftAlong("resid_post.0", u, delta=bad),
                 lambda: ShiftAlong("resid_post.0", u, delta=1.0, sigma=bad),
                 lambda: AddVector("resid_post.0", u, scale=bad),
                 lambda: DirectionEdit("resid_post.0", u, edits.shift, amount=bad)):
        with pytest.raises(DirectionShapeError, match="finite"):
            make()


def test_feature_shapes_of_every_site_kind(llama):
    shapes = {s: llama.feature_shape(llama.resolve_sites(s)[0], pattern_width=5)
              for s in ("resid_pre.0", "attn.0.q", "attn.0.k", "attn.0.v", "attn.0.z",
                        "attn.0.pattern", "attn_out.0", "mlp_out.0", "final_norm.scale",
                        "logits")}
    assert shapes == {"resid_pre.0": (32,), "attn.0.q": (4, 8), "attn.0.k": (2, 8),
                      "attn.0.v": (2, 8), "attn.0.z": (4, 8), "attn.0.pattern": (4, 5),
                      "attn_out.0": (32,), "mlp_out.0": (32,), "final_norm.scale": (),
                      "logits": (llama.vocab_size,)}


def test_non_finite_zero_or_non_numeric_vectors_are_refused_when_built():
    from bayesgeom.interp import edits

    nan_u = torch.ones(32)
    nan_u[3] = float("nan")
    with pytest.raises(DirectionShapeError, match="the direction has 1 NaN/inf entry"):
        ProjectOut("resid_post.0", nan_u)
    with pytest.raises(DirectionShapeError, match="the vector has 32 NaN/inf entries"):
        AddVector("resid_post.0", torch.full((32,), float("inf")))
    with pytest.raises(DirectionShapeError, match="zero norm"):
        ShiftAlong("resid_post.0", torch.zeros(32), delta=1.0)
    AddVector("resid_post.0", torch.zeros(32))  # a vector, not a direction: zero is allowed
    with pytest.raises(DirectionShapeError, match="must be a tensor or a list of numbers"):
        KeepOnly("resid_post.0", ["a", "b"])
    with pytest.raises(DirectionShapeError, match=r"fraction must be a number, got '0\.5'"):
        ProjectOut("resid_post.0", torch.ones(32), fraction="0.5")
    with pytest.raises(DirectionShapeError, match="overflows"):
        ShiftAlong("resid_post.0", torch.ones(32), delta=1e200, sigma=1e200)
    x, u = torch.ones(2, 4), torch.tensor([1.0, 0, 0, 0])
    for bad in (lambda: edits.shift(x, u, float("nan")), lambda: edits.add(x, u, float("inf")),
                lambda: edits.project_out(x, u, float("nan"))):
        with pytest.raises(DirectionShapeError, match="must be finite"):
            bad()


def test_a_vector_changed_after_building_is_checked_when_attached(llama):
    iv = ProjectOut("resid_post.0", torch.ones(32))
    iv.direction = torch.full((32,), float("nan"))
    with pytest.raises(DirectionShapeError, match="NaN/inf"):
        intervene(llama, iv)
    iv = AddVector("resid_post.0", torch.ones(32))
    iv.scale = float("inf")
    with pytest.raises(DirectionShapeError, match="scale=inf"):
        intervene(llama, iv)
    assert _hooks(llama.hf) == 0


def test_a_direction_with_huge_entries_is_normalised_without_overflow(llama, prompts):
    u = _unit(32, 5)
    base = llama.logits(prompts)
    with intervene(llama, ProjectOut("resid_post.0", u)):
        unit = llama.logits(prompts)
    with intervene(llama, ProjectOut("resid_post.0", u * 1e30)):  # |u|^2 overflows float32
        huge = llama.logits(prompts)
    torch.testing.assert_close(huge, unit)
    assert not torch.equal(unit, base)


def test_an_edit_that_makes_activations_non_finite_is_named(llama, prompts):
    """A finite but huge scale overflows float32: an error naming the edit, site, prompt and
    position -- never NaN logits with a false 'had no effect' warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with (pytest.raises(interp.NonFiniteActivationError,
                            match=r"AddVector at resid_post\.0 turned finite activations into "
                                  r"NaN/inf at prompt 0, position 2 \(4 of 4 edited rows\)"),
              intervene(llama, AddVector("resid_post.0", 10 * torch.ones(32), scale=3e38,
                                         positions=[2]))):
            llama.logits(prompts)
    assert _hooks(llama.hf) == 0


def test_non_finite_logits_of_an_intervened_forward_are_named(llama, prompts):
    def poison(_m, _a, out):
        out = out.clone()
        out[-1, -1] = float("nan")  # the last prompt's last token
        return out

    n3 = len(llama.encode(prompts)[0][3])
    h = llama.hf.model.norm.register_forward_hook(poison)
    try:
        with (pytest.raises(interp.NonFiniteActivationError,
                            match=rf"NaN logits at prompt 3, position {n3 - 1} under "
                                  r"AddVector at resid_post\.0"),
              intervene(llama, AddVector("resid_post.0", torch.ones(32)))):
            llama.logits(prompts)
        assert llama.checked_edits == []
        with intervene(llama, AddVector("resid_post.0", torch.ones(32)), check_finite=False):
            assert torch.isnan(llama.logits(prompts)[3]).all()
    finally:
        h.remove()
