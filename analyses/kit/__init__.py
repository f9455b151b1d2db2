"""What every experiment shares: its options (:mod:`.run_options`), its one error type
(:mod:`.errors`), its registry entry (:mod:`.experiment`), the one writer of its run folder
(:mod:`.writer`), its ``--out`` claim (:mod:`.out_dirs`), how a model spec is opened
(:mod:`.models`), HTML reports (:mod:`.html`) and how numbers are printed (:mod:`.numbers`).
The command-line derivation of options is :mod:`.options`."""

from .errors import ExperimentError
from .experiment import Experiment
from .out_dirs import claim
from .run_options import Batched, LoadOptions, ModelOptions, RunOptions, Seeded
from .writer import write_run

__all__ = ["Batched", "Experiment", "ExperimentError", "LoadOptions", "ModelOptions",
           "RunOptions", "Seeded", "claim", "write_run"]
