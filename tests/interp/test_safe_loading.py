"""Safe loading: safetensors only unless allow_pickle, truncated weights named as a fault, a model
folder without tokenizer files, device strings checked against this machine, exit statuses."""

from __future__ import annotations

import shutil

import pytest
import torch
import transformers

from bayesgeom import interp
from bayesgeom.interp import InterpError, PickleWeightsError, PromptError
from bayesgeom.interp.errors import NonFiniteActivationError, StoreError, StoreMismatchError
from bayesgeom.records import FileFault, UsageError, exit_code


def _tiny_gpt2() -> transformers.GPT2LMHeadModel:
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=20, n_positions=16,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


@pytest.fixture(scope="module")
def gpt2_dirs(tmp_path_factory):
    """(safetensors dir, pickle-only dir) of the same tiny GPT-2 and the module itself.
    transformers 5 writes safetensors even with safe_serialization=False, so the pickle copy is
    written the way older transformers did: torch.save(state_dict) as pytorch_model.bin."""
    root = tmp_path_factory.mktemp("gpt2")
    hf = _tiny_gpt2()
    hf.save_pretrained(root / "safe")
    (root / "pickle").mkdir()
    hf.config.save_pretrained(root / "pickle")
    torch.save(hf.state_dict(), root / "pickle" / "pytorch_model.bin")
    return root / "safe", root / "pickle", hf


def test_pickle_only_weights_are_refused_unless_allowed(gpt2_dirs):
    _, pickle_dir, hf = gpt2_dirs
    with pytest.raises(PickleWeightsError) as e:
        interp.load(pickle_dir)
    msg = str(e.value)
    assert "\n" not in msg and str(pickle_dir) in msg and "pytorch_model.bin" in msg
    assert "safe_serialization=True" in msg and "allow_pickle=True" in msg
    assert exit_code(e.value) == 2
    m = interp.load(pickle_dir, allow_pickle=True)
    ids = [[1, 2, 3, 4]]
    torch.testing.assert_close(m.logits(ids), interp.InterpModel(hf).logits(ids))


def test_a_truncated_safetensors_file_is_a_fault_naming_it(gpt2_dirs, tmp_path):
    safe_dir, _, _ = gpt2_dirs
    d = tmp_path / "cut"
    shutil.copytree(safe_dir, d)
    w = d / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-100])
    with pytest.raises(FileFault) as e:
        interp.load(d)
    assert str(w) in str(e.value) and "truncated" in str(e.value) and "\n" not in str(e.value)
    assert exit_code(e.value) == 1
    w.write_bytes(b"\xff" * 64)  # not even a header
    with pytest.raises(FileFault, match="not a safetensors file"):
        interp.load(d)


def test_a_folder_without_weights_or_shards_says_so(gpt2_dirs, tmp_path):
    safe_dir, _, _ = gpt2_dirs
    d = tmp_path / "bare"
    d.mkdir()
    shutil.copy(safe_dir / "config.json", d)
    with pytest.raises(interp.ModelNotAvailableError, match="holds no model weights"):
        interp.load(d)
    (d / "model.safetensors.index.json").write_text(
        '{"weight_map": {"a": "model-00001-of-00002.safetensors"}}')
    with pytest.raises(interp.ModelNotAvailableError, match="lacks model-00001-of-00002"):
        interp.load(d)


def test_a_model_folder_without_tokenizer_takes_ids_and_says_so_for_text(gpt2_dirs):
    safe_dir, _, _ = gpt2_dirs
    m = interp.load(safe_dir)
    assert m.tokenizer is None
    assert m.logits([[1, 2, 3]]).shape == (1, 20)
    with pytest.raises(PromptError) as e:
        m.logits(["hello"])
    assert str(e.value) == (f"{safe_dir} has no tokenizer (no tokenizer.json / "
                            f"tokenizer_config.json in {safe_dir}); add the tokenizer files or "
                            "pass token ids")


def test_a_hub_repo_without_safetensors_is_refused(monkeypatch):
    """transformers' own error for use_safetensors=True on a pickle-only repo becomes the same
    one-line refusal (no Hub needed: from_pretrained is stubbed with that error)."""
    from bayesgeom.interp import loading

    def no_safetensors(src, **kw):
        assert kw["use_safetensors"] is True
        raise OSError(f"{src} does not appear to have a file named model.safetensors or "
                      "model.safetensors.index.json and thus cannot be loaded with `safetensors`. "
                      "Please do not set `use_safetensors=True`.")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_safetensors)
    with pytest.raises(PickleWeightsError, match=r"org/old-model holds pickle weights only"):
        loading._from_dir("org/old-model", {"use_safetensors": True})


def test_device_strings_are_checked(monkeypatch, tiny_models):
    assert interp.check_device("cpu") == torch.device("cpu")
    with pytest.raises(InterpError, match=r"unknown device 'foo'; this machine has: cpu"):
        interp.check_device("foo")
    with pytest.raises(InterpError, match="unknown device 'foo'"):
        interp.load(tiny_models["llama"].path, device="foo")
    with pytest.raises(InterpError, match="cannot run a model here"):
        interp.check_device("meta")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InterpError, match=r"'cuda' is not available: .*no CUDA GPU; this machine "
                                          r"has: cpu$"):
        interp.check_device("cuda")
    with pytest.raises(InterpError, match="no CUDA GPU"):
        interp.load(tiny_models["llama"].path, device_map={"": "cuda:0"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(InterpError, match=r"'cuda:3' does not exist \(1 cuda device\); this "
                                          r"machine has: cpu, cuda:0"):
        interp.check_device("cuda:3")
    assert interp.check_device("cuda:0") == torch.device("cuda:0")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(InterpError, match="no Apple MPS device"):
        interp.check_device("mps")


def test_exit_statuses_of_interp_errors():
    assert isinstance(InterpError("x"), UsageError) and isinstance(InterpError("x"), ValueError)
    assert exit_code(PromptError("x")) == 2 and exit_code(StoreMismatchError("x")) == 2
    assert exit_code(StoreError("x")) == 1
    nan = NonFiniteActivationError("x")
    assert exit_code(nan) == 1 and isinstance(nan, FloatingPointError)


def _edit_config(d, **changes) -> None:
    import json

    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, **changes}))


@pytest.mark.parametrize("change, said", [
    ({"n_layer": 2}, "missing from the weights, which would be random (transformer.h.1."),
    ({"n_layer": 0}, "no place in the model the config builds (transformer.h.0."),
    ({"n_inner": 48}, "of another shape than the config's (transformer.h.0.mlp."),
])
def test_weights_that_do_not_fill_the_config_are_refused_naming_them(gpt2_dirs, tmp_path,
                                                                      capfd, change, said):
    """A config.json naming 2 layers beside weights for 1 (or 0 beside 1, or another MLP width)
    would load with random tensors and exit 0: it is one line, a fault, naming them."""
    safe_dir, _, _ = gpt2_dirs
    d = tmp_path / "edited"
    shutil.copytree(safe_dir, d)
    _edit_config(d, **change)
    capfd.readouterr()
    with pytest.raises(FileFault) as e:
        interp.load(d)
    msg = str(e.value)
    assert said in msg and str(d) in msg and "\n" not in msg, msg
    assert exit_code(e.value) == 1
    assert "LOAD REPORT" not in capfd.readouterr().err  # the one line says it all
    interp.load(safe_dir)  # the untouched folder loads as before
