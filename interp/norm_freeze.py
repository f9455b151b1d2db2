"""Freeze the final norm's scale at its clean value: the *direct* effect of an edit.

A final LayerNorm/RMSNorm divides the residual stream by its scale s = sqrt(mean(x_c²) + eps)
(see the ``final_norm.scale`` site). An edit upstream changes the logits both through the
direction it moves the residual and through s. Inside :func:`frozen_final_norm` the norm's output
is rescaled to use the scale recorded on the clean pass instead of its own:
``y' = b + (y − b) · s_now / s_clean`` (b: the norm's bias, if any), which is exactly the norm
evaluated with s_clean, for any norm of the form b + w ⊙ (x − μ)/s. The edited pass then gives the
direct effect; without it, the total effect.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .errors import InterpError
from .hf_hooks import HFHookBackend, norm_scale

if TYPE_CHECKING:
    from .model import InterpModel


def final_norm_module(model: InterpModel) -> nn.Module:
    if not isinstance(model.backend, HFHookBackend):
        raise InterpError("freezing the final norm needs the 'hf' backend "
                          f"(this model uses {model.info.backend!r})")
    return model.modules.final_norm(model.resolve_sites("final_norm.scale")[0])


@contextmanager
def frozen_final_norm(model: InterpModel, scale: torch.Tensor) -> Iterator[None]:
    """Run the final norm with ``scale`` [B, T] (float32, recorded on the clean pass of the same
    batch via the ``final_norm.scale`` site) in place of its own; the hook is removed on exit."""
    norm = final_norm_module(model)
    s_clean = torch.as_tensor(scale).detach().float()
    if s_clean.ndim != 2 or not bool((s_clean > 0).all()):
        raise InterpError("frozen_final_norm needs a positive [B, T] scale from a clean pass")

    def hook(mod: nn.Module, args: tuple, out: Any) -> Any:
        x = args[0]
        y = out[0] if isinstance(out, tuple) else out
        if tuple(x.shape[:2]) != tuple(s_clean.shape):
            raise InterpError(f"frozen scale has shape {list(s_clean.shape)}, the final norm "
                              f"sees {list(x.shape[:2])}: record it on the same batch")
        ratio = (norm_scale(x, mod) / s_clean.to(x.device))[..., None]
        bias = getattr(mod, "bias", None)
        b = bias.float() if isinstance(bias, torch.Tensor) else 0.0
        new = ((y.float() - b) * ratio + b).to(y.dtype)
        return (new, *out[1:]) if isinstance(out, tuple) else new

    handle = norm.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()
