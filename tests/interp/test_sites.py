"""Site-name parsing: negative layers, wildcards, and errors that list the valid names."""

import pytest

from bayesgeom.interp.errors import UnknownSiteError
from bayesgeom.interp.sites import Site, parse_site, parse_sites


def test_names_round_trip_and_negative_layers_count_from_the_end():
    assert parse_site("resid_post.-1", 30) == Site("resid_post", 29)
    assert parse_site("attn.-1.v", 30).name == "attn.29.v"
    assert parse_site("attn.3.pattern", 30).pos_axis == 2
    assert parse_site("final_norm.scale", 30) == Site("final_norm.scale")
    assert [s.name for s in parse_sites(["resid_pre.*"], 3)] == [
        "resid_pre.0", "resid_pre.1", "resid_pre.2"]
    assert parse_site("attn.0.v", 2).per_head and not parse_site("logits", 2).per_head


def test_duplicates_collapse_in_request_order():
    got = [s.name for s in parse_sites(["logits", "attn.-1.v", "attn.1.v", "resid_post.0"], 2)]
    assert got == ["logits", "attn.1.v", "resid_post.0"]


@pytest.mark.parametrize("name, needle", [
    ("resid_mid.0", "unknown site 'resid_mid.0'"),
    ("attn.0.values", "unknown site"),
    ("resid_post.30", "layer 30"),
    ("attn.-31.v", "layer -31"),
])
def test_unknown_sites_and_layers_list_the_valid_ones(name, needle):
    with pytest.raises(UnknownSiteError) as e:
        parse_sites([name], 30)
    msg = str(e.value)
    assert needle in msg
    assert "0..29" in msg
    if "unknown site" in msg:
        assert "resid_post.{L}" in msg and "attn.{L}.{q,k,v,pattern,z}" in msg


def test_read_only_sites():
    assert not parse_site("attn.0.pattern", 1).writable
    assert not parse_site("final_norm.scale", 1).writable
    assert parse_site("attn.0.v", 1).writable


def test_layer_resolution_and_site_names_have_one_home():
    from bayesgeom.interp import resolve_layer, resolve_layers, site_name

    assert resolve_layer(-1, 30) == 29 and resolve_layers([0, -1, 5], 30) == [0, 5, 29]
    assert resolve_layers(None, 3) == [0, 1, 2]
    assert site_name("attn.v", 4) == "attn.4.v" and site_name("resid_post", 2) == "resid_post.2"
    assert site_name("logits") == "logits"
    with pytest.raises(UnknownSiteError, match=r"valid layers are 0\.\.29"):
        resolve_layer(30, 30)
    with pytest.raises(UnknownSiteError, match="same layer twice"):
        resolve_layers([1, -1], 2)
    with pytest.raises(UnknownSiteError, match="unknown site kind"):
        site_name("attn.x", 0)
