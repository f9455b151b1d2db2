"""The options of ``bayesgeom geometry``: :class:`GeometryConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ...probes.entropy_probe import ProbeConfig
from ...records import check_options, option
from ...records.budget import DRAWS, PROMPTS
from ..kit.errors import ExperimentError
from ..kit.options import layers_option
from ..kit.run_options import Batched, LoadOptions, ModelOptions, RunOptions, Seeded, TwinSeeded
from ..kit.shard_options import Sharded, check_workers
from ..prompts.corpora import DEFINITION_DOMAINS, PROMPT_SETS, TASK_SET, CorpusPaths, gcide_missing
from ..prompts.gcide import check_dictionary
from ..prompts.segmentation import WindowSpec


@dataclass
class GeometryConfig(Sharded, LoadOptions, ModelOptions, Batched, Seeded, TwinSeeded, RunOptions,
                     experiment="geometry"):
    """Everything that defines a geometry run (the CLI derives its options from this)."""

    prompts: tuple[str, ...] | None = option(
        None, f"prompt sets, the first is the headline one: {', '.join(PROMPT_SETS)} (default "
              "mixed; a wind-tunnel run uses its task)")
    layers: tuple[int, ...] | None = layers_option()
    layer: int = option(-1, "the Table-1 layer (-1: the last)", layer=True)
    n_per_quintile: int = option(15, "prompts per entropy quintile", min=1, cost=PROMPTS)
    n_bins: int = option(5, "entropy bins", min=1, cli=False, cost=PROMPTS)
    pool_size: int = option(1000, "candidate prompts scored before sampling", min=1, cost=PROMPTS)
    n_resamples: int = option(1000, "bootstrap resamples at the Table-1 layer",
                              flag="--bootstrap", min=10, cost=DRAWS)
    curve_resamples: int = option(200, "bootstrap resamples at the other layers", min=10,
                                  cli=False, cost=DRAWS)
    score_batch_size: int = option(32, "prompts per forward when scoring the pool", min=1,
                                   identity=False, cli=False)
    random_init_draws: int = option(64, "Gaussian draws of the random-init key baseline",
                                    min=1, cli=False, cost=DRAWS)
    init_baseline: bool = option(True, "the same analysis on the model's random-initialisation "
                                 "twin (same class and config, the family's own init)",
                                 negate="--no-init-baseline")
    windows: WindowSpec = option(None, "how corpora are cut into prompts", factory=WindowSpec,
                                 cli=False)
    corpus_paths: CorpusPaths | None = option(None, "where corpora are read", cli=False)

    def check(self) -> None:
        """The shared checks (:meth:`RunOptions.check`), the prompt sets' names
        (:func:`check_prompt_names`), the sizes (:func:`check_sizes`) and the dictionary a
        definition set needs (:func:`check_corpora`)."""
        super().check()
        check_prompt_names(self)
        check_sizes(self)
        check_corpora(self)


def check_config(cfg: GeometryConfig) -> None:
    """The options, the sizes and the installed dictionary of ``cfg`` (not its ``out``:
    ``compare`` and ``monitor`` run geometry configs into folders of their own)."""
    check_options(cfg, cfg.error)
    check_prompt_names(cfg)
    check_sizes(cfg)
    check_corpora(cfg)


def check_prompt_names(cfg: GeometryConfig) -> None:
    """Every ``prompts`` name is a prompt set (or a wind tunnel's ``task``), before any model
    loads: a typo is one line with the nearest name (which sets a model can read is checked
    once it is loaded)."""
    bad = [s for s in cfg.prompts or () if s not in (*PROMPT_SETS, TASK_SET)]
    if bad:
        near = difflib.get_close_matches(bad[0], PROMPT_SETS, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise ExperimentError(f"unknown prompt set(s) {', '.join(bad)}; {hint}choose from "
                              f"{', '.join(PROMPT_SETS)}")


def check_corpora(cfg: GeometryConfig) -> None:
    """A definition domain (``gcide-*``) needs Debian's dict-gcide, whole: before any model
    loads, a missing install is one line saying how to install it (a usage error) and a
    damaged one a one-line :class:`~records.FileFault` naming the file (exit status 1;
    :func:`~analyses.prompts.gcide.check_dictionary` reads the index and inflates the data,
    about 1 s, without parsing the articles). The other corpora are read, and skipped with a
    message, when the pool is built."""
    asked = [s for s in cfg.prompts or () if s in DEFINITION_DOMAINS]
    if not asked:
        return
    paths = cfg.corpus_paths or CorpusPaths()
    why = gcide_missing(paths)
    if why is not None:
        raise ExperimentError(f"prompt set {asked[0]}: {why}")
    check_dictionary(paths.dictd)


def check_sizes(cfg: GeometryConfig) -> None:
    """The pool and the cross-validated probe have room for the prompts asked for."""
    n, probe = cfg.n_per_quintile * cfg.n_bins, ProbeConfig()
    check_workers(cfg.workers, cfg.devices, n, "prompts per set", cfg.error, cfg.launcher,
                  cfg.slurm_additional_parameters)
    if cfg.pool_size < n:
        raise ExperimentError(f"pool size {cfg.pool_size} is smaller than the {n} prompts to "
                            "sample")
    if n - -(-n // probe.n_folds) < 2 * probe.inner_folds:
        raise ExperimentError(f"{n} prompts per set are too few for the cross-validated probe "
                            f"({probe.n_folds} outer x {probe.inner_folds} inner folds); "
                            "take more per quintile")
