"""The LSTM baseline (arch ``lstm``, :data:`LSTM`): the authors' LSTM as a ``PreTrainedModel``.

:class:`WindTunnelLSTM`: token + learned position embedding, ``n_layer`` stacked single-layer
``torch.nn.LSTM`` s (input = hidden = ``d_model``, no residual connection, as the authors'
``nn.LSTM(d, d, num_layers)``: one module per layer so that ``interp`` can hook every layer),
final LayerNorm, LM head tied to the token embedding. No dropout (the authors use 0.1 between
layers; the wind-tunnel transformer uses none). The authors' bijection LSTM (d 192, 6 layers)
has 1.79M parameters; this class with the same sizes has the same count. Its config
(``model_type`` ``bayesgeom_lstm``) is registered with ``AutoConfig`` /
``AutoModelForCausalLM`` by :func:`windtunnel.architectures.register_auto_classes` (run by
``import bayesgeom.windtunnel`` and before every checkpoint load), so ``save_pretrained`` /
``from_pretrained``, checkpoints and ``interp.load(path)`` work once ``windtunnel`` has been
imported in the process (the registration is global).

:func:`lstm_config` keeps the transformer preset's depth and matches its parameter count by
``d_model`` (one LSTM layer costs 8d² + 8d, so the step between widths is about 2/d of the
total: ≤ 1 % off from d = 100, ≤ 3 % at the tiny preset's d ≈ 32). Left-padded batches
(``attention_mask`` with leading zeros, as ``interp`` builds them) give the same outputs at the
real tokens as the unpadded prompts: the LSTM runs each row from its first real token. The
Mamba baselines: :mod:`windtunnel.mamba`, :mod:`windtunnel.mamba2`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PretrainedConfig
from transformers.modeling_outputs import CausalLMOutput

from .arch_spec import ArchSpec, SavedModelSpec, widths_to
from .task import TokenTask
from .tied_lm import TiedEmbeddingLM
from .transformer import get_preset, transformer_params


class WindTunnelLSTMConfig(PretrainedConfig):
    model_type = "bayesgeom_lstm"

    def __init__(
        self,
        vocab_size: int = 40,
        n_positions: int = 38,
        d_model: int = 64,
        n_layer: int = 2,
        layer_norm_eps: float = 1e-5,
        **kwargs: Any,
    ):
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.d_model = d_model
        self.n_layer = n_layer
        self.layer_norm_eps = layer_norm_eps
        kwargs.setdefault("tie_word_embeddings", True)
        super().__init__(**kwargs)

    @property
    def num_hidden_layers(self) -> int:
        return self.n_layer

    @property
    def hidden_size(self) -> int:
        return self.d_model


def _left_aligned(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Roll row ``b`` of ``x`` [B, T, D] left by ``shift[b]`` (its pad count): the real tokens
    first, the pads after them (a causal recurrence never reads them)."""
    T = x.shape[1]
    idx = (torch.arange(T, device=x.device)[None, :] + shift[:, None]) % T
    return x.gather(1, idx[:, :, None].expand_as(x))


def _pad_aligned(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`_left_aligned`."""
    return _left_aligned(x, (x.shape[1] - shift) % x.shape[1])


class LSTMLayer(nn.Module):
    """One LSTM layer (``lstm``: ``nn.LSTM(d, d, batch_first=True)``): [B, T, d] -> [B, T, d].

    ``attention_mask`` [B, T] (1 = real token, padding on the left only) makes each row start
    from the zero state at its first real token; padded positions output zeros."""

    def __init__(self, d_model: int):
        super().__init__()
        self.lstm = nn.LSTM(d_model, d_model, batch_first=True)

    def forward(self, hidden_states: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is None or bool(attention_mask.bool().all()):
            return self.lstm(hidden_states)[0]
        mask = attention_mask.bool()
        shift = (~mask).sum(-1)
        out = self.lstm(_left_aligned(hidden_states, shift))[0]
        return _pad_aligned(out, shift) * mask[:, :, None].to(out.dtype)


class WindTunnelLSTM(TiedEmbeddingLM):
    """Logits [B, T, vocab] for ids [B, T]; ``hidden_states`` follow HF (the embedding output,
    then every layer's output, the last one after the final norm)."""

    config_class = WindTunnelLSTMConfig
    base_model_prefix = "lstm"

    def __init__(self, config: WindTunnelLSTMConfig):
        super().__init__(config)
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Embedding(c.n_positions, c.d_model)
        self.layers = nn.ModuleList(LSTMLayer(c.d_model) for _ in range(c.n_layer))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.post_init()

    #: the head shares the embedding's weight: drawn once, as the embedding
    normal_init: ClassVar[tuple[type[nn.Module], ...]] = (nn.Embedding,)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.LSTM):
            # torch's own LSTM initialisation, U(-1/sqrt(d), 1/sqrt(d)), drawn afresh
            bound = 1.0 / math.sqrt(module.hidden_size)
            for p in module.parameters():
                nn.init.uniform_(p, -bound, bound)
        else:
            super()._init_weights(module)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        return_dict: bool = True,
        logits_to_keep: int = 0,
        **_: object,
    ) -> CausalLMOutput:
        T = input_ids.shape[1]
        c = self.config
        if position_ids is None:
            if c.n_positions < T:
                raise ValueError(f"sequence length {T} exceeds n_positions={c.n_positions}")
            position_ids = torch.arange(T, device=input_ids.device)[None, :]
        elif int(position_ids.max()) >= c.n_positions:
            raise ValueError(f"position {int(position_ids.max())} exceeds "
                             f"n_positions={c.n_positions}")
        x = self.embed(input_ids) + self.pos(position_ids)
        hidden = [x]
        for layer in self.layers:
            x = layer(x, attention_mask=attention_mask)
            hidden.append(x)
        x = self.norm(x)
        if output_hidden_states:
            hidden[-1] = x
        if logits_to_keep:
            x = x[:, -logits_to_keep:]
        return CausalLMOutput(
            logits=self.lm_head(x), hidden_states=tuple(hidden) if output_hidden_states else None
        )


def lstm_params(vocab_size: int, n_positions: int, d_model: int, n_layer: int) -> int:
    """Parameter count of :class:`WindTunnelLSTM` (tied head counted once)."""
    d = d_model
    return (vocab_size + n_positions) * d + n_layer * (8 * d * d + 8 * d) + 2 * d



def lstm_config(task: TokenTask, preset: str) -> WindTunnelLSTMConfig:
    """The LSTM of the preset's depth whose width brings its count closest to the
    transformer's."""
    p = get_preset(preset)
    target = transformer_params(task, preset)
    V, P = task.vocab_size, task.max_seq_len

    def cost(d: int) -> int:
        return lstm_params(V, P, d, p.n_layer)

    d = min(widths_to(target, cost), key=lambda d: abs(cost(d) - target))
    return WindTunnelLSTMConfig(vocab_size=V, n_positions=P, d_model=d, n_layer=p.n_layer,
                                bayesgeom_preset={"n_layer": p.n_layer, "d_model": d,
                                                  "matched_to": preset})


def lstm_sizes(task: TokenTask, preset: str) -> dict[str, int]:
    """Depth, width, parameter count and the transformer's, of the matched LSTM."""
    c = lstm_config(task, preset)
    return {"n_layer": c.n_layer, "d_model": c.d_model,
            "params": lstm_params(task.vocab_size, task.max_seq_len, c.d_model, c.n_layer),
            "transformer_params": transformer_params(task, preset)}


LSTM_SAVED = SavedModelSpec("bayesgeom_lstm", final_norm="norm",
                            classes=(WindTunnelLSTMConfig, WindTunnelLSTM))

LSTM = ArchSpec("lstm", LSTM_SAVED,
                build=lambda task, preset: WindTunnelLSTM(lstm_config(task, preset)),
                sizes=lstm_sizes, activation_bytes=None)
