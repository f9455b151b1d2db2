"""What a steering experiment edits along: per layer the entropy axis' edit direction
(``edit_space``), its null of control directions (``null``), the variance each control carries
and the energy each edit moves.

Edit spaces (the axis is fitted in a standardised space, :class:`probes.EntropyAxis`):

* ``readout`` -- the raw-space readout direction (``EntropyAxis.readout_direction``): the axis
  coordinate ``project(x)`` is proportional to x·u, so a full cut makes it constant;
* ``standardised`` -- Paper III's code: the unit PC1 of the standardised space
  (``EntropyAxis.direction``) used directly as a raw-space direction; ``project(x')`` still varies
  after a cut, which is how Paper III's "0.27 → 0.07" read-out can move.

Nulls (``n`` control directions per layer, unit, orthogonal to u; layer ℓ seeded seed + 1000·ℓ):

* ``energy`` (default) -- :func:`probes.energy_controls.independent_energy_controls`: random
  directions r drawn independently, each carrying the axis' *energy where the edits are
  applied* exactly, rᵀMr = uᵀMu with M the uncentred second moment of the clean activations at
  every edited position of the scored prompts, so a cut or keep-only along a control removes
  exactly what it removes along the axis (a shift moves every direction by the same δσ).
  Independent draws are exchangeable with the axis under the null that it is one more, so the
  permutation p among them is exact. Where no direction orthogonal to u carries that energy
  (u is the top- or bottom-energy direction), the controls carry the nearest energy that
  leaves them random, the method "unmatched" and the reason stated: cuts and keep-only then
  get no verdict;
* ``orthonormal`` -- :func:`probes.energy_controls.energy_matched_controls`: the same energy in
  mutually orthogonal frames, only where at least 20 orthogonal directions can carry it (else
  the independent draws, the reason stated); frames are not independent draws, so the null
  rests on the effective number of their effects;
* ``variance`` -- :func:`interp.variance_matched_controls`: random directions with
  Var(x·r) = Var(x·u) over the *fitted* clean final-token activations (centred: not what an
  edit at every position removes);
* ``norm`` -- :func:`interp.random_controls`: random directions matched only in norm (they carry
  far less of x than a top principal direction);
* ``pcs`` -- the other principal components of the standardised activations (PC2, PC3, ... for
  a PC1 axis), mapped to raw space like u and orthogonalised against it.

Every null's controls are described by :class:`ControlSet` (their energy ratio to the axis over
the edited positions, method, whether they are independent draws, how spread their directions
are, :func:`probes.effective_number.effective_number`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ... import interp
from ...infotheory import pearson
from ...interp.interventions import DirectionEdit
from ...probes import EntropyAxis, fit_pca
from ...probes.effective_number import effective_number
from ...probes.energy_controls import (
    ControlDraw,
    EnergyMoments,
    energy_matched_controls,
    independent_energy_controls,
)
from .config import EDIT_SPACES, NULLS
from .result import ControlSet


@dataclass(frozen=True, eq=False)
class LayerAxis:
    """One edited layer: its fitted ``axis``, the ``space`` it is edited in, the unit edit
    direction ``unit`` [F] (float64, raw activation space) and ``sigma`` = std(x·u) (ddof = 1)
    over the clean fitted activations, the unit of a δ·σ shift for the axis and every control."""

    axis: EntropyAxis
    space: str
    unit: np.ndarray
    sigma: float

    @classmethod
    def of(cls, axis: EntropyAxis, x: np.ndarray, edit_space: str) -> LayerAxis:
        """The edit direction of ``axis`` in ``edit_space`` and its σ over ``x`` [N, F]."""
        if edit_space == "readout":
            u = axis.readout_direction
        elif edit_space == "standardised":
            u = axis.direction / np.linalg.norm(axis.direction)
        else:
            raise ValueError(f"edit_space must be one of {', '.join(EDIT_SPACES)}")
        u = np.asarray(u, dtype=np.float64)
        return cls(axis, edit_space, u, float((np.asarray(x, np.float64) @ u).std(ddof=1)))

    def coordinate_corr(self, x: np.ndarray, h: np.ndarray) -> float:
        """``axis_corr``: Pearson corr(x·u, H) over rows of ``x`` [N, F] (raw coordinate along
        the edit direction; a cut scales it by 1 − f, which cannot change a correlation, and
        a full cut makes it constant: NaN)."""
        return constant_safe_corr(np.asarray(x, np.float64) @ self.unit, h, self.sigma)

    def projection_corr(self, x: np.ndarray, h: np.ndarray) -> float:
        """``axis_proj_corr`` (Paper III's read-out): Pearson corr(axis.project(x), H), the rows
        projected in the standardised space the axis was fitted in."""
        return constant_safe_corr(self.axis.project(x), h, self.axis.sigma)


def constant_safe_corr(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    """Pearson corr(a, b); NaN when ``a`` is constant up to float noise (its std below 1e-4 of
    the clean spread ``sigma``, as after a full cut) or ``b`` is constant."""
    a = np.asarray(a, dtype=np.float64)
    if a.std() <= 1e-4 * sigma:
        return float("nan")
    return float(pearson(a, b))


def controls(la: LayerAxis, x: np.ndarray, moments: EnergyMoments, null: str, n: int,
             seed: int) -> ControlDraw:
    """``n`` unit control directions [n, F] (float64) orthogonal to ``la.unit`` (module doc),
    for fitted activations ``x`` [N, F] and the ``moments`` of the edited positions, with how
    they were drawn (for the nulls other than the energy ones: the null's name as method,
    independent draws except the PCs)."""
    u = torch.as_tensor(la.unit, dtype=torch.float64)
    if null == "energy":
        return independent_energy_controls(la.unit, moments, n, seed=seed)
    if null == "orthonormal":
        return energy_matched_controls(la.unit, moments, n, seed=seed)
    if null == "variance":
        r = interp.variance_matched_controls(u, torch.as_tensor(x, dtype=torch.float64), n,
                                             seed=seed).numpy()
    elif null == "norm":
        r = interp.random_controls(u, n, seed=seed).numpy()
    elif null == "pcs":
        r = _pc_controls(la, x, n)
    else:
        raise ValueError(f"null must be one of {', '.join(NULLS)}, got {null!r}")
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    ratios = np.array([moments.energy(v) for v in r]) / moments.energy(la.unit)
    return ControlDraw(r, moments.energy(la.unit), (float(ratios.min()), float(ratios.max())),
                       null, 1, independent=null != "pcs")


def _pc_controls(la: LayerAxis, x: np.ndarray, n: int) -> np.ndarray:
    ax = la.axis
    pca = fit_pca(ax.to_axis_space(x), n_components=n + 1)
    comps = pca.components[pca.eigenvalues > 1e-12 * max(float(pca.eigenvalues[0]), 1e-300)]
    out = []
    for c in comps:
        if abs(float(c @ ax.direction)) > 1 - 1e-9:
            continue  # the axis itself (PC1 for a pc1 axis)
        # readout space: a component's raw readout direction, like the axis' own
        w = c / ax.scale if la.space == "readout" and ax.scale is not None else c
        for _ in range(2):
            w = w - (w @ la.unit) * la.unit
        if np.linalg.norm(w) > 1e-8:
            out.append(w / np.linalg.norm(w))
    if len(out) < n:
        raise ValueError(f"the pcs null needs {n} principal components besides the axis; the "
                         f"fitted activations give {len(out)}: lower n_random")
    return np.stack(out[:n])


@dataclass
class Directions:
    """Every direction set of an experiment: ``names`` ("axis", "control-0", ...), ``per_layer``
    (for each name, one float32 [F] direction per edited layer, in layer order) and
    ``controls`` (layer -> :class:`ControlSet`: what its controls carry and how many
    independent ones they amount to)."""

    names: list[str]
    per_layer: list[list[torch.Tensor]]
    controls: dict[int, ControlSet]

    def __iter__(self) -> Iterator[tuple[str, list[torch.Tensor]]]:
        return iter(zip(self.names, self.per_layer, strict=True))

    def __len__(self) -> int:
        return len(self.names)


def edit_directions(reads: dict[int, LayerAxis], acts: dict[int, np.ndarray],
                    moments: dict[int, EnergyMoments], null: str, n: int,
                    seed: int) -> Directions:
    """The axis' edit direction and ``n`` controls per layer (``acts``: layer -> clean fitted
    final-token activations [N, F]; ``moments``: layer -> the clean activations' moments at
    the edited positions)."""
    layers = sorted(reads)
    ctrl, sets = {}, {}
    for L in layers:
        draw = controls(reads[L], acts[L], moments[L], null, n, seed + 1000 * L)
        ctrl[L] = draw.directions
        target = moments[L].energy(reads[L].unit)
        ratios = np.array([moments[L].energy(r) for r in ctrl[L]]) / target
        sets[L] = ControlSet.of(ratios, effective_number(ctrl[L], moments[L]), draw.method,
                                draw.reason, draw.independent, draw.reach, draw.orthogonal)
    names = ["axis", *(f"control-{i}" for i in range(n))]
    per_layer = [[torch.as_tensor(reads[L].unit).float() for L in layers]]
    per_layer += [[torch.as_tensor(ctrl[L][i]).float() for L in layers] for i in range(n)]
    return Directions(names, per_layer, sets)


def edit_energy(moments: EnergyMoments, iv: DirectionEdit) -> float:
    """The energy an edit moves where it is applied, mean ‖x' − x‖² / mean ‖x‖² over every
    edited position of the clean pass (``moments``), x' = the edit of ``iv`` (its own edit
    function and parameters, direction made unit), exact for these affine edits
    (:meth:`probes.energy_controls.EnergyMoments.edit_energy`). A fraction ≥ 0 of the
    activations' mean squared norm: how much the edit removed (a cut of fraction f:
    f²·mean (x·u)² / mean ‖x‖²) or added (a δσ shift: (δσ)² / mean ‖x‖²), not which."""
    d = torch.as_tensor(iv.direction, dtype=torch.float64).flatten()
    unit = d / d.norm()

    def edit(rows: np.ndarray) -> np.ndarray:
        return iv.edit(torch.as_tensor(rows, dtype=torch.float64), unit).numpy()

    return moments.edit_energy(edit)
