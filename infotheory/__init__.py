"""infotheory: the one home of information measures in bits -- entropy (from probabilities,
log-probabilities or logits), KL divergence, total variation, NaN-safe Pearson correlation,
calibration against an exact posterior and the fraction of a corruption's KL a patch
recovers. For numpy arrays and torch tensors alike.

It sits at the bottom of bayesgeom (beside ``records``) because every layer needs it: wind
tunnels for their exact posteriors and evaluation, ``interp`` for capture's next-token entropy,
``probes`` and ``analyses`` for everything else. It imports no other bayesgeom package."""

from .calibration import Calibration, calibration, calibration_by_group
from .measures import (
    LN2,
    entropy_bits_from_logits,
    entropy_bits_from_logprobs,
    entropy_bits_from_probs,
    kl_bits,
    kl_bits_from_logprobs,
    log_softmax,
    pearson,
    tvd,
)
from .recovery import recovered_fraction

__all__ = [
    "LN2",
    "Calibration",
    "calibration",
    "calibration_by_group",
    "entropy_bits_from_logits",
    "entropy_bits_from_logprobs",
    "entropy_bits_from_probs",
    "kl_bits",
    "kl_bits_from_logprobs",
    "log_softmax",
    "pearson",
    "recovered_fraction",
    "tvd",
]
