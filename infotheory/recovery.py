"""How much of a corruption a patch undoes, in the units of the exact posterior.

With p*_clean the exact posterior of the clean input, q_corrupt the model's output on the
corrupted input and q_patched its output with one activation patched from the clean run, the
**recovered fraction** is

    1 − KL(p*_clean ‖ q_patched) / KL(p*_clean ‖ q_corrupt)

1: the patch restores a distribution as close to the truth as the clean run's would be at
KL = 0; 0: no better than the corrupted run; negative: worse; NaN where the corruption moved
nothing (KL(p*_clean ‖ q_corrupt) = 0, so there is nothing to recover). Unlike the anchors'
normalised logit difference it is scored against the exact posterior, not the model's own clean
run, so a model's error on the clean input is not counted as the patch's effect.

Example:
    >>> import numpy as np
    >>> recovered_fraction(np.array([0.1, 0.5, 0.0]), np.array([0.4, 0.5, 0.0])).tolist()
    [0.75, 0.0, nan]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .measures import _is_torch


def recovered_fraction(kl_patched: Any, kl_corrupt: Any) -> Any:
    """1 − ``kl_patched`` / ``kl_corrupt`` elementwise (both KL divergences from the clean
    input's exact posterior, in bits, broadcastable; NaN where ``kl_corrupt`` is 0). numpy in,
    float64 numpy out; torch in, torch out (differentiable)."""
    if _is_torch(kl_patched) or _is_torch(kl_corrupt):
        import torch

        ta, tb = torch.as_tensor(kl_patched), torch.as_tensor(kl_corrupt)
        tb = tb.to(torch.promote_types(tb.dtype, ta.dtype))
        frac = 1 - ta / torch.where(tb > 0, tb, torch.ones_like(tb))
        return torch.where(tb > 0, frac, torch.full_like(frac, float("nan")))
    a = np.asarray(kl_patched, dtype=np.float64)
    b = np.asarray(kl_corrupt, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(b > 0, 1 - a / np.where(b > 0, b, 1.0), np.nan)
    return out[()] if out.ndim == 0 else out
