"""The entropy axis: a unit direction in activation space whose coordinate tracks entropy.

Coordinates live in the *axis space*: rows centred on the fitting mean and, when standardised,
divided by the fitting std (Paper III's axis is PC1 of standardised final-token values).
``project(x) = ((x − mean) / scale) · direction``. Sign convention: the direction is flipped
so that Pearson corr(project(x), entropy) ≥ 0 on the fitting data, i.e. the coordinate increases
with entropy. ``sigma`` is the std (ddof = 1) of the projection on the fitting data (the unit of
Paper III's ±1σ shifts).

Fitting methods:
* ``"pc1"`` — first principal component (Paper III);
* ``"ridge"`` — the normalised ridge coefficient vector of entropy on the axis-space features,
  α chosen by 5-fold CV over :data:`probes.entropy_probe.DEFAULT_ALPHAS` unless given;
* ``"mean_difference"`` — mean of the top ``quantile`` of samples by entropy minus the mean of
  the bottom ``quantile``.

Saved as two files: ``<stem>.safetensors`` (direction, mean and scale, float64) and
``<stem>.json`` (scalars and provenance, with the SHA-256 of the safetensors file). Each is
written atomically, the JSON last, and :meth:`EntropyAxis.load` checks the hash.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from ..infotheory import pearson
from ..records import atomic_write_bytes, atomic_write_text
from .arrays import as_matrix, as_vector
from .bootstrap import make_rng
from .correlation import spearman
from .entropy_probe import DEFAULT_ALPHAS, select_alpha
from .pca import fit_pca, standardization_scale
from .ridge import ridge_path

AxisMethod = Literal["pc1", "ridge", "mean_difference"]
FORMAT = "bayesgeom.entropy_axis"
FORMAT_VERSION = 1


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def prompt_set_hash(prompts: Sequence[str]) -> str:
    """SHA-256 (hex) of the ordered prompt texts, for provenance."""
    return hashlib.sha256(json.dumps(list(prompts), ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class AxisProvenance:
    """Where an axis came from. ``target`` names the regressed quantity (bits)."""

    model: str | None = None
    revision: str | None = None
    site: str | None = None
    layer: int | None = None
    prompt_set: str | None = None
    prompt_set_hash: str | None = None
    target: str = "next_token_entropy_bits"
    created: str = field(default_factory=_now)


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class EntropyAxis:
    """A fitted axis. Shapes: ``direction``, ``mean``, ``scale`` [d]; ``scale`` None if the
    axis space is only centred. ``pearson``/``spearman``: corr(projection, entropy) on the fitting
    data (``pearson`` ≥ 0 by the sign convention)."""

    direction: np.ndarray
    mean: np.ndarray
    scale: np.ndarray | None
    sigma: float
    method: str
    n: int
    pearson: float
    spearman: float
    explained_variance_ratio: float | None
    provenance: AxisProvenance

    @property
    def dim(self) -> int:
        return int(self.direction.shape[0])

    def to_axis_space(self, x: object) -> np.ndarray:
        """Centre (and scale) rows ``x`` [n, d] like the fitting data."""
        a = as_matrix(x)
        if a.shape[1] != self.dim:
            raise ValueError(f"x has {a.shape[1]} features, the axis has {self.dim}")
        a = a - self.mean
        return a if self.scale is None else a / self.scale

    def project(self, x: object) -> np.ndarray:
        """Axis coordinate of each row of ``x`` [n, d] -> [n]."""
        return self.to_axis_space(x) @ self.direction

    def project_sigma(self, x: object) -> np.ndarray:
        """Axis coordinate in units of ``sigma`` [n]."""
        return self.project(x) / self.sigma

    @property
    def readout_direction(self) -> np.ndarray:
        """Unit vector w in raw activation space with project(x) ∝ w · (x − mean). [d]"""
        w = self.direction if self.scale is None else self.direction / self.scale
        return w / np.linalg.norm(w)

    def save(self, path: str | Path) -> tuple[Path, Path]:
        """Write ``<stem>.safetensors`` and ``<stem>.json`` (suffix of ``path`` ignored)."""
        stem = _stem(path)
        arrays = {"direction": self.direction, "mean": self.mean}
        if self.scale is not None:
            arrays["scale"] = self.scale
        blob = st_save({k: np.ascontiguousarray(v, dtype=np.float64) for k, v in arrays.items()})
        st_path = atomic_write_bytes(stem.with_suffix(".safetensors"), blob)
        meta = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "arrays_file": st_path.name,
            "arrays_sha256": hashlib.sha256(blob).hexdigest(),
            "dim": self.dim,
            "standardized": self.scale is not None,
            "sigma": self.sigma,
            "method": self.method,
            "n": self.n,
            "pearson": self.pearson,
            "spearman": self.spearman,
            "explained_variance_ratio": self.explained_variance_ratio,
            "provenance": asdict(self.provenance),
        }
        js_path = atomic_write_text(stem.with_suffix(".json"), json.dumps(meta, indent=2) + "\n")
        return st_path, js_path

    @classmethod
    def load(cls, path: str | Path) -> EntropyAxis:
        """Read an axis written by :meth:`save`; raises ValueError on a hash/format mismatch."""
        stem = _stem(path)
        meta = json.loads(stem.with_suffix(".json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{stem}.json is not a {FORMAT} v{FORMAT_VERSION} file")
        blob = (stem.parent / meta["arrays_file"]).read_bytes()
        if hashlib.sha256(blob).hexdigest() != meta["arrays_sha256"]:
            raise ValueError(f"{meta['arrays_file']} does not match the hash in {stem}.json")
        arrays = st_load(blob)
        if arrays["direction"].shape != (meta["dim"],):
            raise ValueError(f"direction shape {arrays['direction'].shape} != ({meta['dim']},)")
        return cls(
            direction=arrays["direction"],
            mean=arrays["mean"],
            scale=arrays.get("scale"),
            sigma=float(meta["sigma"]),
            method=meta["method"],
            n=int(meta["n"]),
            pearson=float(meta["pearson"]),
            spearman=float(meta["spearman"]),
            explained_variance_ratio=meta["explained_variance_ratio"],
            provenance=AxisProvenance(**meta["provenance"]),
        )


def _stem(path: str | Path) -> Path:
    p = Path(path)
    return p.with_suffix("") if p.suffix in {".json", ".safetensors"} else p


def fit_entropy_axis(
    x: object,
    entropy: object,
    method: AxisMethod = "pc1",
    standardize: bool = True,
    provenance: AxisProvenance | None = None,
    alpha: float | None = None,
    quantile: float = 0.2,
    seed: int = 0,
) -> EntropyAxis:
    """Fit an axis to activations ``x`` [n, d] and entropies ``entropy`` [n] (see module doc)."""
    a = as_matrix(x, min_rows=3)
    h = as_vector(entropy, "entropy", n=a.shape[0])
    mean = a.mean(axis=0)
    scale = standardization_scale(a.std(axis=0, ddof=1)) if standardize else None
    z = a - mean if scale is None else (a - mean) / scale
    evr: float | None = None
    if method == "pc1":
        pca = fit_pca(z, n_components=1)
        u = pca.components[0]
        evr = float(pca.explained_variance_ratio[0])
    elif method == "ridge":
        if alpha is None:
            alpha = select_alpha(z, h, DEFAULT_ALPHAS, 5, False, make_rng(seed))
        u = ridge_path(z, h, [alpha], standardize=False)[0].coef
    elif method == "mean_difference":
        if not 0.0 < quantile <= 0.5:
            raise ValueError(f"quantile must be in (0, 0.5], got {quantile}")
        lo, hi = np.quantile(h, [quantile, 1.0 - quantile])
        if not (h <= lo).any() or not (h >= hi).any() or lo == hi:
            raise ValueError("entropy has no spread between its quantiles")
        u = z[h >= hi].mean(axis=0) - z[h <= lo].mean(axis=0)
    else:
        raise ValueError(f"unknown method {method!r}; use 'pc1', 'ridge' or 'mean_difference'")
    norm = float(np.linalg.norm(u))
    if norm == 0.0:
        raise ValueError(f"method {method!r} produced a zero direction")
    u = u / norm
    proj = z @ u
    r = pearson(proj, h)
    if np.isfinite(r) and r < 0:
        u, proj = -u, -proj
    return EntropyAxis(
        direction=u,
        mean=mean,
        scale=scale,
        sigma=float(proj.std(ddof=1)),
        method=method,
        n=a.shape[0],
        pearson=float(pearson(proj, h)),
        spearman=float(spearman(proj, h)),
        explained_variance_ratio=evr,
        provenance=provenance or AxisProvenance(),
    )
