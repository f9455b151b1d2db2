"""``bayesgeom dynamics verify``: Paper II's gradient identities in every attention head of a
model (a wind tunnel or a Hugging Face causal LM), predicted from the forward tensors and
compared with autograd, each beside a deliberately wrong law (:mod:`.run`)."""

from ...kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "verify", "the routing law, value update and Q/K gradients of every "
    "attention head, predicted and compared with autograd", "DynamicsVerifyConfig",
    "run_dynamics_verify", group="dynamics"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"DynamicsVerifyConfig": "config", "DynamicsVerifyResult": "result",
           "run_dynamics_verify": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
