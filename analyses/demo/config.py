"""The options of ``bayesgeom demo``: :class:`DemoConfig`, each declared once, and its ``check()``,
which the command line runs before the run module is imported: this module imports no torch,
transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at once, with
nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option
from ..kit.errors import ExperimentError
from ..kit.options import allow_pickle_option, model_option
from ..kit.run_options import RunOptions, Seeded
from ..prompts.corpora import CorpusPaths


@dataclass
class DemoSizes:
    """How big each step is (``DemoConfig.sizes()`` picks the default, ``--paper`` or
    ``--quick``)."""

    transformer_steps: int
    hmm_steps: int
    n_per_quintile: int
    pool_size: int
    n_resamples: int
    curve_resamples: int
    sula_per_k: int
    steer_per_k: int
    cut_fractions: tuple[float, ...]
    shift_deltas: tuple[float, ...]
    n_random: int | None  # None: as many as the primary family needs to survive Holm
    windtunnel_prompts: int


#: the default: what a newcomer should see first, in about 10 minutes from a fresh clone on 2
#: cores (the three user stories end to end, each with its controls)
STANDARD = DemoSizes(2000, 1500, 10, 500, 300, 100, 30, 10, (1.0,), (1.0,), None, 250)
#: ``--paper``: the long run (3,000 steps per tunnel, the full bootstraps)
FULL = DemoSizes(3000, 3000, 15, 1000, 1000, 200, 50, 20, (1.0,), (1.0,), None, 250)
#: ``--quick``: CI's few-minute smoke test (no number in it is a result)
QUICK = DemoSizes(400, 200, 4, 120, 100, 20, 8, 8, (1.0,), (1.0,), 10, 64)


@dataclass
class DemoConfig(Seeded, RunOptions, experiment="demo", required_out=False):
    """The main job."""

    quick: bool = option(False, "a few-minute smoke test (CI): no number in it is a result")
    paper: bool = option(False, "the long run: 3,000 training steps per tunnel and the full "
                         "bootstraps (about 25 minutes on 2 cores)")
    model: str | None = model_option("the LLM: Hub name or local directory (default: the "
                                     "embedded SmolLM2-135M)")
    allow_pickle: bool = allow_pickle_option()
    baselines: tuple[str, ...] = option(("mlp-position", "mlp-flat"), "MLP baselines trained "
                                        "for the transformer's wall time", cli=False)
    preset: str = option("small", "wind-tunnel model size", cli=False)
    task_params: dict = option(None, "bijection parameters", factory=lambda: {"V": 20},
                               cli=False)
    hmm_params: dict = option(None, "HMM parameters (the geometry and steering tunnel)",
                              factory=dict, cli=False)
    standard_sizes: DemoSizes = option(None, "the default sizes", factory=lambda: STANDARD,
                                       cli=False)
    full: DemoSizes = option(None, "the --paper sizes", factory=lambda: FULL, cli=False)
    quick_sizes: DemoSizes = option(None, "the quick sizes", factory=lambda: QUICK, cli=False)
    corpus_paths: CorpusPaths | None = option(None, "where corpora are read", cli=False)

    def check(self) -> None:
        super().check()
        if self.quick and self.paper:
            raise ExperimentError("--quick and --paper exclude each other: give one")

    def sizes(self) -> DemoSizes:
        if self.quick:
            return self.quick_sizes
        return self.full if self.paper else self.standard_sizes
