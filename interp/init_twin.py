"""The random-initialisation twin of a model: the control every geometry number is read beside.

The twin is the same Hugging Face class built from a copy of the same config, so its weights
come from the family's own initialisation (the model class's ``_init_weights``: e.g. GPT-2's
N(0, 0.02) with scaled residual projections, Llama's N(0, initializer_range)), not an i.i.d.
Gaussian stand-in. The tokenizer and any attached task are shared, so the twin reads exactly
the prompts the trained model reads. Building it draws from torch's global generator inside a
forked RNG state seeded with ``seed``: the same seed gives the same twin, and the caller's
random state is left as it was.
"""

from __future__ import annotations

import copy

import torch

from .errors import InterpError
from .model import InterpModel


def random_init_twin(model: InterpModel, seed: int = 0) -> InterpModel:
    """A freshly initialised copy of ``model``'s architecture (same class, config, dtype,
    device, tokenizer and task), named ``"<name> @ random init (seed N)"``.

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
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        try:
            fresh = type(hf)(copy.deepcopy(config))
        except Exception as e:  # a class that cannot be rebuilt from its config alone
            raise InterpError(f"cannot rebuild {type(hf).__name__} from its config at random "
                              f"initialisation: {e}") from e
    fresh = fresh.to(device=param.device, dtype=param.dtype)
    return InterpModel(fresh, model.tokenizer, name=f"{model.info.name} @ random init "
                       f"(seed {seed})", source="random-init", revision=model.info.revision,
                       task=model.task, backend=model.info.backend,
                       tl_source=None if model.info.backend == "hf" else model.info.name)
