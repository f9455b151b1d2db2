"""Each experiment's ``--out``: held by one writer and claimed by one run (:class:`records.RunDir`).

The claim's settings are the config's identity options (:func:`records.run_settings`: not the
output folder, progress bars or batch sizes) plus the model actually run -- its name and the
SHA-256 of its weights -- so a rerun with another model or other settings is never mistaken for
this one, while spelling out a default or changing a batch size is the same run.

Example:
    >>> import tempfile, pathlib
    >>> from dataclasses import dataclass
    >>> from bayesgeom.records import option
    >>> from bayesgeom.analyses.kit import RunOptions
    >>> @dataclass
    ... class Cfg(RunOptions, experiment="demo-doc"):
    ...     k: int = option(3, "k")
    >>> cfg = Cfg(out=pathlib.Path(tempfile.mkdtemp()) / "run")
    >>> with claim(cfg) as rd:
    ...     rd.settings
    {'k': 3}
"""

from __future__ import annotations

from typing import Any

from ...records import RunDir, run_settings


def claim(cfg: Any, model: Any | None = None) -> RunDir:
    """A :class:`records.RunDir` of experiment ``cfg.experiment`` for ``cfg.out`` (enter it
    with ``with``), with ``model`` (an :class:`interp.InterpModel`) named by its weights digest
    in the settings."""
    settings = run_settings(cfg)
    if model is not None:
        settings["model_run"] = {"name": model.info.name, "weights": model.weights_digest()}
    return RunDir(cfg.out, cfg.experiment, settings, restart=bool(getattr(cfg, "restart", False)),
                  formerly=getattr(cfg, "formerly", ()))
