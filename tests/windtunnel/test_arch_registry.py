"""Every registered arch keeps its spec's promises (its count, its blocks, its saved model, its
memory estimate), and a new arch costs one spec and one :func:`register` call: the toy below,
declared here, trains, checkpoints, evaluates and reopens through the ordinary entry points."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput

from bayesgeom.analyses.cli import main
from bayesgeom.windtunnel import TaskConfigError, load_run, make_task
from bayesgeom.windtunnel.arch_registry import (
    ARCH_NAMES,
    arch_spec,
    register,
    saved_model_spec,
    unregister,
)
from bayesgeom.windtunnel.arch_spec import ArchSpec, SavedModelSpec
from bayesgeom.windtunnel.architectures import arch_sizes, build_model, check_batch_memory, n_params
from bayesgeom.windtunnel.checkpoint import load_model
from bayesgeom.windtunnel.readout import block_outputs, final_norm_and_head
from bayesgeom.windtunnel.task import TokenTask
from bayesgeom.windtunnel.training import TrainConfig, train
from bayesgeom.windtunnel.transformer import get_preset


class PrefixMeanConfig(PretrainedConfig):
    model_type = "toy_prefix_mean"

    def __init__(self, vocab_size: int = 12, d_model: int = 8, **kwargs: Any):
        self.vocab_size, self.d_model = vocab_size, d_model
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)


class PrefixMean(PreTrainedModel):
    """A toy arch: ids [B, T] -> logits [B, T, V] from the running mean of the token
    embeddings, one residual MLP block, a final LayerNorm and an untied head."""

    config_class = PrefixMeanConfig
    base_model_prefix = "toy"
    _tied_weights_keys: ClassVar[dict[str, str]] = {}

    def __init__(self, config: PrefixMeanConfig):
        super().__init__(config)
        d = config.d_model
        self.embed = nn.Embedding(config.vocab_size, d)
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def forward(self, input_ids: torch.Tensor, output_hidden_states: bool = False,
                **_: object) -> CausalLMOutput:
        e = self.embed(input_ids)
        count = torch.arange(1, e.shape[1] + 1, device=e.device, dtype=e.dtype)[None, :, None]
        x = e.cumsum(1) / count
        x = x + self.fc(F.gelu(x))
        z = self.norm(x)
        return CausalLMOutput(logits=self.lm_head(z),
                              hidden_states=(e, z) if output_hidden_states else None)


def _sizes(task: TokenTask, preset: str) -> dict[str, int]:
    V, d = task.vocab_size, get_preset(preset).d_model
    return {"n_layer": 1, "d_model": d, "params": V * d + d * d + d + 2 * d + d * V}


#: the whole cost of the toy arch: this spec and the register() call in the fixture
TOY = ArchSpec(
    "toy-prefix-mean",
    SavedModelSpec("toy_prefix_mean", final_norm="norm", classes=(PrefixMeanConfig, PrefixMean)),
    build=lambda task, preset: PrefixMean(PrefixMeanConfig(task.vocab_size,
                                                           get_preset(preset).d_model)),
    sizes=_sizes, activation_bytes=None)


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister(TOY.name)


def check_spec(arch: str, tmp: Path) -> None:
    """What every arch's spec promises, on a tiny bijection model."""
    task = make_task("bijection", V=6)
    spec, sizes = arch_spec(arch), arch_sizes(task, arch, "tiny")
    model = build_model(task, arch, "tiny", seed=1).eval()
    assert n_params(model) == sizes["params"]  # the count is exact
    ids = task.sample(3, 0).input_ids
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
        hs = out.hidden_states
        blocks = block_outputs(model, hs)
        norm, head = final_norm_and_head(model)
        lens = head(norm(blocks[-1]))
        # HF Mamba's layout ends with the last block's output and then its final norm
        repeated = torch.allclose(norm(hs[-2]), hs[-1], atol=1e-6)
    assert len(blocks) == sizes["n_layer"] and lens.shape == out.logits.shape
    assert repeated == spec.saved.final_repeated
    assert saved_model_spec(model.config.model_type) is spec.saved
    model.save_pretrained(tmp)
    back = load_model(tmp).eval()  # the classes, kernels and forward it was built with
    assert [type(m) for m in back.modules()] == [type(m) for m in model.modules()]
    with torch.no_grad():
        assert torch.equal(back(ids).logits, model(ids).logits)
    big = make_task("assoc_recall")
    with pytest.raises(TaskConfigError, match="more than this machine") as e:
        check_batch_memory(big, arch, "paper", 10**6, 1)
    if spec.activation_bytes is not None:
        assert spec.activation_what.format(n=10**6, T=big.seq_len) in str(e.value)


@pytest.mark.parametrize("arch", list(ARCH_NAMES))
def test_every_arch_keeps_its_specs_promises(arch, tmp_path):
    check_spec(arch, tmp_path)


def test_a_registered_arch_trains_evaluates_and_reopens(toy, tmp_path, capsys):
    check_spec(toy.name, tmp_path / "model")
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, arch=toy.name, preset="tiny",
                      steps=4, batch_size=8, warmup_steps=1, eval_every=2, eval_size=8,
                      final_eval_size=16, ckpt_every=2, seed=0)
    res = train(cfg, tmp_path / "run", progress=False)
    assert res.steps_done == 4 and res.params == toy.sizes(cfg.validate(), "tiny")["params"]
    assert len(res.report.per_layer["kl_bits"]) == 1  # the logit lens found its one block
    run = load_run(tmp_path / "run")
    assert run.arch == toy.name and isinstance(run.model, PrefixMean)
    # the command line offers it with no edit
    assert main(["windtunnel", "train", "--arch", toy.name, "--preset", "tiny", "--V", "6",
                 "--steps", "2", "--batch-size", "4", "--eval-every", "2", "--eval-size", "4",
                 "--no-progress", "--out", str(tmp_path / "cli")]) == 0
    assert load_run(tmp_path / "cli").arch == toy.name


def test_unknown_clashing_and_incomplete_specs_are_refused(toy):
    with pytest.raises(TaskConfigError, match=r"unknown arch 'gru'; available: transformer, "):
        arch_spec("gru")
    assert list(ARCH_NAMES)[-1] == toy.name  # a registered arch comes after the declared ones
    with pytest.raises(ValueError, match="already registered"):
        register(ArchSpec("lstm", toy.saved, build=toy.build, sizes=toy.sizes,
                          activation_bytes=None))
    with pytest.raises(TypeError, match="different SavedModelSpecs"):
        register(ArchSpec("toy-2", SavedModelSpec("toy_prefix_mean", final_norm="norm"),
                          build=toy.build, sizes=toy.sizes, activation_bytes=None))
        saved_model_spec("toy_prefix_mean")
    unregister("toy-2")
    assert "toy-2" not in ARCH_NAMES
    with pytest.raises(ValueError, match="attention patterns cost memory"):
        ArchSpec("toy-3", toy.saved, build=toy.build, sizes=toy.sizes, activation_bytes=None,
                 attention=True)
