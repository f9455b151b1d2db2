"""``bayesgeom dynamics verify``: Paper II's gradient identities in every attention head of a
model (a wind tunnel or a Hugging Face causal LM), predicted from the forward tensors and
compared with autograd, each beside a deliberately wrong law (:mod:`.run`)."""

from typing import TYPE_CHECKING

from ....records.lazy import lazy_exports
from ...kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import DynamicsVerifyConfig
    from .result import DynamicsVerifyResult
    from .run import run_dynamics_verify

EXPERIMENTS = (Experiment.in_package(
    __name__, "verify", "the routing law, value update and Q/K gradients of every "
    "attention head, predicted and compared with autograd", group="dynamics"),)

__all__ = ["EXPERIMENTS", "DynamicsVerifyConfig", "DynamicsVerifyResult", "run_dynamics_verify"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
