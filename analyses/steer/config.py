"""The options of ``bayesgeom steer``: :class:`SteerConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ...interp.sites import VECTOR_KINDS
from ...records import option, seed_option
from ...records.budget import CONTROLS, PROMPTS
from ..kit.errors import ExperimentError
from ..kit.model_facts import check_task
from ..kit.options import comma_floats, comma_ints
from ..kit.run_options import Batched, LoadOptions, ModelOptions, RunOptions, Seeded

#: by default a primary verdict that no control reaches survives Holm even if this many more
#: controls had reached it (:func:`controls_needed`): one more extreme control cannot flip it
MARGIN = 3

#: the spaces an edit direction lives in, and the control directions' nulls
#: (:mod:`analyses.steer.nulls`)
EDIT_SPACES = ("readout", "standardised")
NULLS = ("energy", "orthonormal", "variance", "norm", "pcs")


@dataclass
class SteerConfig(LoadOptions, ModelOptions, Batched, Seeded, RunOptions,
                  experiment="steer", batch_size=32):
    """One steering experiment (the CLI derives its options from this)."""

    task: str | None = option(None, "sula for a text model (default); a wind-tunnel run's own "
                                    "task (default: the run's)")
    site: str = option("attn.v", "site kind edited at each layer (attn.v: the values)",
                       choices=VECTOR_KINDS)
    layers: tuple[int, ...] = option((-1,), "edited layers, e.g. -1 or 8,12,16,20,23 (each "
                                            "its own axis)", parse=comma_ints,
                                      layer=True)
    positions: str = option("all", "edit every real token, or the last one",
                            choices=("all", "last"))
    axis_method: str = option("pc1", "how the entropy axis is fitted",
                              choices=("pc1", "ridge", "mean_difference"))
    cut_fractions: tuple[float, ...] = option((0.25, 0.5, 0.75, 1.0), "fractions of the axis "
                                              "component removed", flag="--cut",
                                              parse=comma_floats, min=0.0, max=2.0)
    keep_only: bool = option(True, "the keep-only condition", negate="--no-keep-only")
    shift_deltas: tuple[float, ...] = option((-2.0, -1.0, 1.0, 2.0), "shifts δ in units of σ",
                                             flag="--shift", parse=comma_floats)
    n_random: int | None = option(None, "control directions per layer (default: enough that a "
                                  "primary verdict no control reaches survives Holm with "
                                  f"{MARGIN} to spare, ⌈{MARGIN + 1}m/0.05⌉ for m "
                                  "conditions)", min=1, cost=CONTROLS)
    null: str = option("energy", "control directions: drawn independently, each carrying the "
                       "axis' energy where the edits are applied (energy); the same in "
                       "mutually orthogonal frames where those can (orthonormal); with its "
                       "variance over the fitted final-token activations (variance); with its "
                       "norm; or the other PCs", choices=NULLS)
    quick: bool = option(False, "a minutes-long smoke run (10 prompts per k or 60 prompts, a "
                         "full cut and keep-only, 10 controls): says that nothing in it can "
                         "survive Holm")
    edit_space: str = option("readout", "edit along the axis' raw-space readout direction, or "
                             "(Paper III's code) its standardised PC1 as a raw direction",
                             choices=EDIT_SPACES)
    norm_frozen: bool = option(True, "the norm-frozen effect (final-norm scale frozen)",
                               negate="--no-norm-frozen")
    direct_path: bool = option(False, "the direct-path effect (downstream components held "
                               "clean; one edited layer)")
    n_per_k: int = option(50, "SULA prompts per k", min=1, cost=PROMPTS)
    sula_seed: int = seed_option(42, "seed of the SULA draws", cli=False)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip")
    n_prompts: int = option(250, "wind-tunnel prompts", min=3, cost=PROMPTS)

    def check(self) -> None:
        super().check()
        check_task(self, self.error)
        if not self.layers:
            raise ExperimentError("give at least one layer")
        if not (self.cut_fractions or self.keep_only or self.shift_deltas):
            raise ExperimentError("no condition to run: give cut fractions, shift deltas or "
                                  "keep-only")
        if 0.0 in self.cut_fractions:
            raise ExperimentError("cut fractions must be in (0, 2]; 0 is the clean run")
        if 0.0 in self.shift_deltas:
            raise ExperimentError("shift deltas must be finite and non-zero (δ = 0 is the clean "
                                  "run)")
        if self.quick and self.n_random is not None and self.n_random > QUICK_CONTROLS:
            raise ExperimentError(f"--quick uses {QUICK_CONTROLS} controls; drop --quick to run "
                                  f"{self.n_random}")
        if self.direct_path and len(self.layers) != 1:
            raise ExperimentError("the direct-path effect is defined for one edited layer (with "
                             "several, each layer's edit also reaches the others through the "
                             "residual stream); give one layer or drop --direct-path")


    @property
    def n_conditions(self) -> int:
        """The edit conditions run: each cut fraction, keep-only, each shift
        (:func:`analyses.steer.scores.conditions` lists them)."""
        return len(self.cut_fractions) + int(self.keep_only) + len(self.shift_deltas)

    def sized(self) -> SteerConfig:
        """The configuration that runs: ``quick`` shrinks prompts, conditions and controls;
        ``n_random`` None becomes :func:`controls_needed` with :data:`MARGIN`."""
        c = self
        if c.quick:
            c = replace(c, n_per_k=min(c.n_per_k, 10), n_prompts=min(c.n_prompts, 60),
                        cut_fractions=(1.0,), shift_deltas=(), keep_only=True,
                        n_random=c.n_random or QUICK_CONTROLS)
        if c.n_random is None:
            c = replace(c, n_random=controls_needed(c.n_conditions, margin=MARGIN))
        return c


#: controls in a ``--quick`` run (too few for any adjusted verdict; the summary says so)
QUICK_CONTROLS = 10


def controls_needed(n_conditions: int, alpha: float = 0.05, margin: int = 0) -> int:
    """The fewest controls n with which the primary family of ``n_conditions`` = m tests can
    survive Holm even if ``margin`` of them reach the axis: (1 + margin) / (n + 1) < α/m.
    ``margin`` 0 is the permutation floor itself; the default run takes :data:`MARGIN`.

    Example:
        >>> controls_needed(6), controls_needed(3), controls_needed(1)
        (120, 60, 20)
        >>> controls_needed(3, margin=MARGIN), controls_needed(4, margin=MARGIN)
        (240, 320)
    """
    return math.ceil((1 + margin) * n_conditions / alpha - 1e-9)
