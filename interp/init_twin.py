"""The random-initialisation twin of a model: the control every geometry number is read beside.

The twin is the same Hugging Face class built from a copy of the same config, so its weights
come from the family's own initialisation (the model class's ``_init_weights``: e.g. GPT-2's
N(0, 0.02) with scaled residual projections, Llama's N(0, initializer_range)), not an i.i.d.
Gaussian stand-in. The tokenizer and any attached task are shared, so the twin reads exactly
the prompts the trained model reads. Building it draws from torch's global generator inside a
forked RNG state seeded with ``seed``: the same seed gives the same twin, and the caller's
random state is left as it was.

A twin weighs what the model weighs, and building a family with tied embeddings briefly holds
a second output matrix (its constructor allocates one before tying): beside the trained model
that is up to three copies of a 262k-vocabulary embedding. A caller that has read all it needs
from the model it opened itself passes ``release_model=True``: the trained weights are dropped
first, so the two models are never resident together. The twin is built in the model's own
floating dtype (a bfloat16 model's twin is never a float32 model first).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import torch

from .errors import InterpError
from .model import InterpModel


def random_init_twin(model: InterpModel, seed: int = 0, *,
                     release_model: bool = False) -> InterpModel:
    """A freshly initialised copy of ``model``'s architecture (same class, config, dtype,
    device, tokenizer and task), named ``"<name> @ random init (seed N)"``.

    ``release_model``: first free ``model``'s parameters and buffers (moved to the meta
    device; its name, info, tokenizer and task stay, but it can no longer run or be digested),
    so that the trained model and the twin never occupy memory together. For a caller that
    opened ``model`` itself and is done with its forward passes. A model that cannot be moved
    (dispatched with offloading) is kept.

    Example:
        >>> import transformers
        >>> cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=11)
        >>> trained = InterpModel(transformers.GPT2LMHeadModel(cfg), name="toy")
        >>> twin = random_init_twin(trained, seed=3)
        >>> twin.info.source, twin.n_layers, twin.d_model
        ('random-init', 2, 16)
        >>> twin.weights_digest() == random_init_twin(trained, seed=3).weights_digest()
        True
        >>> twin.weights_digest() == trained.weights_digest()
        False
    """
    hf = model.hf
    config = getattr(hf, "config", None)
    if config is None:
        raise InterpError(f"{model.info.name} has no config, so it cannot be rebuilt at its "
                          "random initialisation")
    param = next(hf.parameters())
    device, dtype = param.device, param.dtype
    del param
    if release_model:
        _release(hf)
    with torch.random.fork_rng(devices=[]), _default_dtype(dtype):
        torch.manual_seed(int(seed))
        try:
            fresh = type(hf)(copy.deepcopy(config))
        except Exception as e:  # a class that cannot be rebuilt from its config alone
            raise InterpError(f"cannot rebuild {type(hf).__name__} from its config at random "
                              f"initialisation: {e}") from e
    fresh = fresh.to(device=device, dtype=dtype)
    return InterpModel(fresh, model.tokenizer, name=f"{model.info.name} @ random init "
                       f"(seed {seed})", source="random-init", revision=model.info.revision,
                       task=model.task, backend=model.info.backend,
                       tl_source=None if model.info.backend == "hf" else model.info.name)


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """Build in the model's own floating dtype (a bfloat16 model's twin is never a float32
    model first: that would be twice its size); float32 models are built exactly as before."""
    old = torch.get_default_dtype()
    switch = dtype.is_floating_point and dtype != old
    if switch:
        torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        if switch:
            torch.set_default_dtype(old)


def _release(hf: torch.nn.Module) -> None:
    """Free the memory of ``hf``'s weights: every parameter and buffer moves to the meta device
    (a memory-mapped checkpoint's pages are unmapped once nothing references them)."""
    try:
        hf.to("meta")
    except (RuntimeError, ValueError, NotImplementedError):
        return  # e.g. offloaded by accelerate: keep it
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
