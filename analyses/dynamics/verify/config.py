"""The options of ``bayesgeom dynamics verify``: :class:`DynamicsVerifyConfig`, each declared
once, and its ``check()``, which the command line runs before the run module is imported: this
module imports no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is
refused at once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ....records import option
from ....records.budget import SEQUENCES
from ...kit.errors import ExperimentError
from ...kit.model_facts import TEXT, WIND_TUNNEL
from ...kit.options import layers_option, model_option
from ...kit.run_options import RunOptions, Seeded


@dataclass
class DynamicsVerifyConfig(Seeded, RunOptions, experiment="dynamics-verify"):
    """One check of one model (``model``: a Hub name, local directory or wind-tunnel run)."""

    model: str | None = model_option()
    layers: tuple[int, ...] | None = layers_option("layers to check")
    prompts: tuple[str, ...] | None = option(None, "prompts of an LLM (default: four "
                                             "built-in sentences)", needs=TEXT)
    n_sequences: int = option(8, "held-out task sequences of a wind tunnel", min=1,
                              needs=WIND_TUNNEL, cost=SEQUENCES)
    loss: str = option("auto", "the loss differentiated: the wind tunnel's task loss, or "
                       "next-token cross-entropy (auto: task for a wind tunnel)",
                       choices=("auto", "task", "next-token"))
    dtype: str = option("float32", "model dtype for the check", choices=("float32",
                                                                         "float64"))
    tolerance: float | None = option(None, "largest relative error that passes (default "
                                     "1e-4 in float32, 1e-6 in float64)", above=0)
    epsilons: tuple[float, ...] = option((1e-1, 1e-2, 1e-3), "first-order loss changes "
                                         "(fractions of L) of the value-step check")

    def check(self) -> None:
        super().check()
        if any(not 0 < e < 1 for e in self.epsilons):
            raise ExperimentError(f"--epsilons must lie in (0, 1), got {self.epsilons}")

    @property
    def bound(self) -> float:
        return self.tolerance or (1e-4 if self.dtype == "float32" else 1e-6)
