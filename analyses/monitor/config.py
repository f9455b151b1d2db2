"""The options of ``bayesgeom monitor``: :class:`MonitorConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...records import RunDirError, check_out, option, seed_option
from ...records.budget import DRAWS, PROMPTS, SEQUENCES
from ..extrapolate.config import ExtrapolateConfig
from ..kit.errors import ExperimentError
from ..kit.run_options import Batched, ModelOptions, RunOptions, Seeded
from ..prompts.corpora import DOMAINS

#: the threshold options, in the checklist's order
THRESHOLDS = ("key_orthogonality_min", "coverage_min", "separation_min", "kl_max",
              "extrapolation_min", "convergence_max_steps", "convergence_mae_bits")


def _threshold(default: float, help: str, **kw: float) -> float:
    return option(default, help, identity=False, **kw)


@dataclass
class MonitorConfig(ModelOptions, Batched, Seeded, RunOptions, experiment="monitor"):
    """One monitoring report (module doc); thresholds do not change the sub-runs."""

    seed: int = seed_option(0, "seed of every sub-run")
    extrapolation: Path | None = option(None, "a finished `bayesgeom extrapolate` run directory "
                                        "(the model must be one of its RUN/train/<arch>)")
    key_orthogonality_min: float = _threshold(0.9, "pass: key orthogonality above", min=0,
                                              max=1)
    coverage_min: float = _threshold(0.8, "pass: hypothesis-space coverage above", min=0,
                                     max=1)
    separation_min: float = _threshold(0.7, "pass: domain-manifold separation above", min=0,
                                       max=1)
    kl_max: float = _threshold(0.01, "pass: posterior KL of the output below (bits)", min=0)
    extrapolation_min: float = _threshold(100, "pass: extrapolation ratio above", min=0)
    convergence_max_steps: float = _threshold(2000, "pass: steps to the MAE level at most",
                                              min=0)
    convergence_mae_bits: float = _threshold(0.05, "convergence: the entropy-MAE level (bits)",
                                             above=0)
    n_sequences: int = option(64, "detect: held-out wind-tunnel sequences", min=1, cost=SEQUENCES)
    n_prompts: int = option(64, "detect: LLM prompts (paragraphs of built-in text)", min=1,
                            cost=PROMPTS)
    verify_prompts: int = option(256, "verify: wind-tunnel prompts", min=4, cost=PROMPTS)
    n_per_k: int = option(20, "verify: SULA prompts per k", min=2, cost=PROMPTS)
    n_null: int = option(200, "verify: within-group permutations per head", min=10, cost=DRAWS)
    separation_sets: tuple[str, str] = option(("code", "legal"), "geometry: the two domains "
                                              "whose value subspaces are compared")
    geometry_per_quintile: int = option(10, "geometry: prompts per entropy quintile", min=1,
                                        cost=PROMPTS)
    geometry_pool: int = option(300, "geometry: candidate prompts scored", min=1, cost=PROMPTS)
    geometry_bootstrap: int = option(100, "geometry: bootstrap resamples", min=10, cost=DRAWS)

    def check(self) -> None:
        super().check()
        if self.extrapolation is not None and not Path(self.extrapolation).is_dir():
            raise ExperimentError(f"--extrapolation {self.extrapolation} is not a directory; give "
                               "the --out of a `bayesgeom extrapolate` run")
        if len(set(self.separation_sets)) != 2:
            raise ExperimentError(f"--separation-sets {','.join(self.separation_sets)}: give two "
                               "different domains, e.g. code,legal")
        unknown = [d for d in self.separation_sets if d not in DOMAINS]
        if unknown:
            raise ExperimentError(f"--separation-sets: unknown domain(s) {', '.join(unknown)}; "
                                  f"choose two of {', '.join(DOMAINS)}")
        if self.extrapolation is not None:  # before any sub-run: it is read only at the end
            try:
                rec = check_out(self.extrapolation, ExtrapolateConfig.experiment,
                                ExtrapolateConfig.formerly)
                why = "" if rec else "it is empty"
            except RunDirError as e:
                why = str(e).split(";")[0]
            if why:
                raise ExperimentError(f"--extrapolation {self.extrapolation} is not a "
                                      f"`bayesgeom extrapolate` run ({why}); give the --out "
                                      "of one")

    def thresholds(self) -> dict[str, float]:
        """Every threshold option by name (what the summary prints)."""
        return {n: float(getattr(self, n)) for n in THRESHOLDS}
