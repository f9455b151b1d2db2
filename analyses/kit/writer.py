"""The one writer of an experiment's run folder: every run writes the same files, the same way.

``write_run`` writes, atomically and in this order: each table (``.parquet``, or CSV for any
other suffix), ``summary.json`` (the typed result, :func:`records.write_result`),
``manifest.json`` (:func:`records.run_manifest`: versions, machine, command, git commit, plus
the experiment's name, seed, dtype, model and its config under the one key ``config``) and
``report.html`` (the experiment's report function, given the manifest). A file every run
writes is added here, once.

Example:
    >>> import tempfile, pathlib
    >>> from dataclasses import dataclass
    >>> import pandas as pd
    >>> from bayesgeom.analyses.kit import RunOptions
    >>> @dataclass
    ... class ToyConfig(RunOptions, experiment="toy"):
    ...     pass
    >>> cfg = ToyConfig(out=pathlib.Path(tempfile.mkdtemp()))
    >>> m = write_run(cfg, {"answer": 42}, tables={"table.parquet": pd.DataFrame({"a": [1]})})
    >>> sorted(p.name for p in cfg.out.iterdir()), m["experiment"], m["config"]["restart"]
    (['manifest.json', 'summary.json', 'table.parquet'], 'toy', False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...records import json_safe, run_manifest, write_json, write_result, write_table

if TYPE_CHECKING:
    import pandas as pd

    from ...interp import InterpModel


def write_run(cfg: Any, result: Any, *, tables: Mapping[str, pd.DataFrame] | None = None,
              report: Callable[[Path, dict[str, Any]], Any] | None = None,
              model: InterpModel | None = None, dtype: str | None = None,
              packages: tuple[str, ...] = (), **manifest: Any) -> dict[str, Any]:
    """Write ``cfg.out``'s files (module doc) and return the manifest. ``model``: the model
    the run read (its info and dtype go into the manifest unless ``dtype`` is given);
    ``packages``: versions to record beyond the core ones; ``manifest``: further entries
    (``seed`` defaults to ``cfg.seed``)."""
    out = Path(cfg.out)
    if model is not None:
        manifest.setdefault("model", model.info.to_dict())
        dtype = dtype or model.info.dtype
    manifest.setdefault("seed", getattr(cfg, "seed", None))
    manifest = run_manifest(packages=packages, experiment=getattr(cfg, "experiment", None),
                            dtype=dtype,
                            config=json_safe(asdict(cfg)), **manifest)
    for name, table in (tables or {}).items():
        write_table(out / name, table)
    write_result(out / "summary.json", result)
    write_json(out / "manifest.json", manifest)
    if report is not None:
        report(out / "report.html", manifest)
    return manifest
