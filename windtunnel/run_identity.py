"""Whether a folder is a wind-tunnel run, read from its records alone: no torch, pandas or
transformers, so a command can refuse a wrong ``--model`` at once (:mod:`.runs` opens the run;
this module only names it).

Example:
    >>> import tempfile, json, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "run.json").write_text(json.dumps({"experiment": EXPERIMENT}))
    >>> is_windtunnel_dir(d), is_windtunnel_dir(d / "nonexistent")
    (True, False)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the experiment name a training run's ``run.json`` carries
EXPERIMENT = "windtunnel train"
RUN_RECORD = "run.json"
MODEL_RECORD = "windtunnel.json"
#: the prefix of the wind tunnels' own ``model_type`` s (``bayesgeom_mlp``, the one whose config
#: carries no ``bayesgeom_preset``, and the LSTM's and Llama's, which carry one)
OWN_MODEL_TYPES = "bayesgeom_"


def record_kind(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """(kind, record) of ``path/run.json``: kind ``"run"`` for a wind-tunnel training record
    (experiment :data:`EXPERIMENT`, or an older record with config and task), ``"other"`` for
    another experiment's, ``"damaged"`` for one that is not a JSON object, None for none."""
    p = path / RUN_RECORD
    if not p.is_file():
        return None, None
    try:
        rec = json.loads(p.read_bytes())
    except (OSError, ValueError):
        return "damaged", None
    if not isinstance(rec, dict):
        return "damaged", None
    if rec.get("experiment") == EXPERIMENT:
        return "run", rec
    legacy = "experiment" not in rec and "config" in rec and "task" in rec
    return ("run" if legacy else "other"), rec


def is_windtunnel_dir(path: Path) -> bool:
    """True for a wind-tunnel run directory (a ``run.json`` of :data:`EXPERIMENT`, or an older
    one with config and task; an unreadable one too, so that opening it names the damage),
    a saved wind-tunnel model or a checkpoint inside a run (a ``config.json`` with the
    ``bayesgeom_preset`` the archs record, or a ``model_type`` of the wind tunnels' own)."""
    if not path.is_dir():
        return False
    if (path / MODEL_RECORD).exists() or record_kind(path)[0] in ("run", "damaged"):
        return True
    cfg = path / "config.json"
    if not cfg.exists():
        return False
    try:
        c = json.loads(cfg.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(c, dict) and ("bayesgeom_preset" in c
                                    or str(c.get("model_type")).startswith(OWN_MODEL_TYPES))


def known_reads(spec: object) -> int | None:
    """How many reads (prediction positions) a wind tunnel's task has, from the run record of
    ``spec`` (a run folder, or its ``model`` folder or a checkpoint inside it): HMM, K;
    bijection's separate-vocabulary layout, L; None where the record does not say.

    Example:
        >>> import tempfile, json, pathlib
        >>> run = pathlib.Path(tempfile.mkdtemp())
        >>> rec = {"experiment": EXPERIMENT, "task": {"task": "hmm", "K": 20}}
        >>> _ = (run / RUN_RECORD).write_text(json.dumps(rec))
        >>> known_reads(run), known_reads(run / "model"), known_reads(tempfile.mkdtemp())
        (20, 20, None)
    """
    if not isinstance(spec, str | Path):
        return None
    folder = Path(spec).expanduser()
    for d in (folder, *folder.parents[:2]):
        kind, rec = record_kind(d)
        if kind is None:
            continue
        task = rec.get("task") if kind == "run" and rec else None
        if not isinstance(task, dict):
            return None
        if task.get("task") == "hmm" and isinstance(task.get("K"), int):
            return int(task["K"])
        if task.get("task") == "bijection" and task.get("layout") == "sepvocab" \
                and isinstance(task.get("L"), int):
            return int(task["L"])
        return None
    return None
