"""Mistral: the Llama layout with sliding-window attention."""

from dataclasses import replace

from .llama import LLAMA

MISTRAL = replace(
    LLAMA,
    name="mistral",
    model_types=("mistral",),
    description="Mistral (GQA, sliding-window attention, RoPE, RMSNorm)",
)
