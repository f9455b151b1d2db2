"""The options of ``bayesgeom compare``: :class:`CompareConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...records import option
from ..geometry.config import GeometryConfig, check_config
from ..kit.errors import ExperimentError
from ..kit.run_options import RunOptions, check_embedded

#: name on the command line for the embedded default model
DEFAULT_MODEL = "default"


@dataclass
class CompareConfig(RunOptions, experiment="compare"):
    """Models to compare and the geometry settings every one of them gets.

    ``models``: run directories, Hub names or local paths; None (or ``"default"``) is the
    embedded SmolLM2, ``"gemma3-270m"`` the embedded Gemma-3-270m (the extra ``gemma``; a
    missing package is refused by :meth:`check`, before any model loads). ``labels``: short
    names (None: derived from the models)."""

    models: tuple[str | None, ...] = option(
        (None,), f"wind-tunnel run directories, Hub names or local paths; "
                 f"'{DEFAULT_MODEL}' is the embedded SmolLM2, 'gemma3-270m' the embedded "
                 "Gemma-3-270m (extra gemma)", required=True)
    labels: tuple[str, ...] | None = option(None, "short names, one per model (comma-separated)")
    geometry: GeometryConfig = option(None, "the geometry settings of every model",
                                      factory=GeometryConfig, cli=False)

    def check(self) -> None:
        """The shared checks, the geometry settings every model gets (:func:`check_config`)
        and the labels (:meth:`resolved_labels`): all before any model loads."""
        super().check()
        check_config(self.geometry)
        self.resolved_labels()
        for spec in self.models:
            check_embedded(spec, self.error)

    def resolved_labels(self) -> list[str]:
        if not self.models:
            raise ExperimentError("give at least one model to compare")
        if self.labels is not None:
            if len(self.labels) != len(self.models):
                raise ExperimentError(f"{len(self.labels)} labels for {len(self.models)} models")
            labels = list(self.labels)
        else:
            labels = [_label(m) for m in self.models]
        bad = [x for x in labels if not x or "/" in x or x.startswith(".")]
        if bad:
            raise ExperimentError(f"labels name output folders: {bad} are not usable (no '/', "
                               "no leading '.')")
        if len(set(labels)) != len(labels):
            raise ExperimentError(f"labels must differ, got {labels}; pass labels")
        return labels


def _label(model: str | None) -> str:
    if model in (None, DEFAULT_MODEL):
        return "smollm2"
    return Path(str(model).rstrip("/")).name or str(model)
