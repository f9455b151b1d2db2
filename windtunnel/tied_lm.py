"""The base of the hand-written wind-tunnel LMs (the MLPs, the LSTM): a Hugging Face
``PreTrainedModel`` with a token embedding ``embed`` and an output head ``lm_head`` that shares
its weight where the widths match (``tie_word_embeddings``), which HF's ``from_pretrained``,
``resize_token_embeddings`` and the interp adapters find through the two accessors."""

from __future__ import annotations

from typing import ClassVar

from torch import nn
from transformers import PreTrainedModel


class TiedEmbeddingLM(PreTrainedModel):
    """``embed`` [vocab, d] and ``lm_head`` [vocab, d] (tied when the config says so); a
    subclass builds both, sets ``config_class`` and writes ``forward``. Weights start at
    N(0, 0.02²) for the module types in ``normal_init`` (biases at 0), LayerNorms at (1, 0)."""

    _tied_weights_keys: ClassVar[dict[str, str]] = {"lm_head.weight": "embed.weight"}
    normal_init: ClassVar[tuple[type[nn.Module], ...]] = (nn.Linear, nn.Embedding)
    embed: nn.Embedding
    lm_head: nn.Linear

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, self.normal_init):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head
