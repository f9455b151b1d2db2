"""TransformerLens hook names where a site is asked for, and "did you mean" hints for unknown
sites and near-miss model names (issue 25)."""

from __future__ import annotations

import pytest

from bayesgeom.interp import ModelNotAvailableError, load, site_name
from bayesgeom.interp.embedded_model import near_alias
from bayesgeom.interp.errors import UnknownSiteError
from bayesgeom.interp.sites import parse_site, parse_sites
from bayesgeom.interp.tl_names import TL_HOOKS, from_tl


@pytest.mark.parametrize("hook, kind, layer", [
    ("blocks.3.hook_resid_post", "resid_post", 3),
    ("blocks.1.hook_resid_pre", "resid_pre", 1),
    ("blocks.0.attn.hook_v", "attn.v", 0),
    ("blocks.2.attn.hook_q", "attn.q", 2),
    ("blocks.2.attn.hook_k", "attn.k", 2),
    ("blocks.4.attn.hook_z", "attn.z", 4),
    ("blocks.2.attn.hook_pattern", "attn.pattern", 2),
    ("blocks.5.hook_mlp_out", "mlp_out", 5),
    ("blocks.5.hook_attn_out", "attn_out", 5),
    ("ln_final.hook_scale", "final_norm.scale", None),
    ("hook_unembed", "logits", None),
])
def test_transformerlens_hooks_are_their_sites(hook, kind, layer):
    assert parse_site(hook, 6).name == site_name(kind, layer)


def test_every_site_kind_has_its_hook_and_wildcards_expand():
    for kind, template in TL_HOOKS.items():
        assert from_tl(template.format(L=1)) == site_name(kind, 1 if "{L}" in template else None)
    assert [s.name for s in parse_sites(["blocks.*.hook_resid_post"], 2)] == [
        "resid_post.0", "resid_post.1"]
    assert parse_site("blocks.-1.hook_resid_post", 4).name == "resid_post.3"


@pytest.mark.parametrize("name, hint", [
    ("hook_embed", "did you mean resid_pre.0"),
    ("ln_final.hook_normalized", "did you mean resid_post.-1"),
    ("blocks.2.hook_resid_mid", "did you mean resid_pre.2 plus attn_out.2"),
    ("blocks.1.attn.hook_attn_scores", "did you mean attn.1.pattern"),
    ("resid_posst.3", "did you mean resid_post.3?"),
    ("attn.0.values", "did you mean attn.0.v?"),
    ("logit", "did you mean logits?"),
])
def test_unknown_sites_get_a_hint_and_the_listing(name, hint):
    with pytest.raises(UnknownSiteError) as e:
        parse_sites([name], 30)
    msg = str(e.value)
    assert f"unknown site {name!r}" in msg and hint in msg and "valid sites:" in msg
    assert "0..29" in msg and "\n" not in msg


def test_a_far_name_and_a_bad_layer_keep_their_messages():
    with pytest.raises(UnknownSiteError) as e:
        parse_site("qqqq", 4)
    assert "did you mean" not in str(e.value)
    with pytest.raises(UnknownSiteError, match="layer 9 does not exist"):
        parse_site("blocks.9.hook_resid_post", 4)


def test_near_miss_model_names():
    assert near_alias("smolm2") == "smollm2"
    assert near_alias("defualt") == "default"
    assert near_alias("gpt2") is None and near_alias("org/smolm2") is None
    with pytest.raises(ModelNotAvailableError, match="did you mean 'smollm2'") as e:
        load("smolm2")  # raised before any Hub access
    assert "\n" not in str(e.value)
