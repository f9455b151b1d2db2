"""``bayesgeom patch``: where in the network the evidence is stored, scored in bits against the
exact posterior, beside its controls.

1. **Pairs** (:mod:`analyses.patch.pairs`): a wind tunnel's own clean/corrupt pairs (one
   observation changed, aligned at one position; Bayes-null pairs whose exact posteriors are
   identical), SULA prompt pairs for a text model (one label flipped; two labels swapped), or
   free pairs from ``--pairs``.
2. **Grid** (:mod:`analyses.patch.grid`): resid_pre / attn_out / mlp_out per layer × position,
   attn.z per layer × head (and × position with ``--head-positions``).
3. **Activation patching** (:func:`interp.activation_patch`), denoising and noising, of every
   cell under every condition: the trained model on the evidence pairs, on the Bayes-null
   pairs, with an unrelated source (another pair's clean sequence), and the random-init twin
   (:func:`interp.random_init_twin`) on the evidence pairs; each pass scored by
   :mod:`analyses.patch.scores` (KL to the exact posteriors in bits, entropy error, logit
   difference, KL to the clean run).
4. **Attribution patching** (:func:`interp.attribution_patch`) of the trained model on the
   evidence pairs, same grid, ranked against the exact effects.
5. **Statistics and verdicts** (:mod:`analyses.patch.stats`, :mod:`analyses.patch.verdicts`):
   per cell the mean effect and recovered fraction with BCa intervals over pairs, the paired
   test against the unrelated source (Holm over the grid, effective number of tests), the
   Bayes-null damage and the twin at the same cell; per site kind the best cell chosen on half
   the pairs and scored on the other, against the same choice among the control cells.

Each condition's patched scores are a part (:class:`records.Parts`) under ``parts/``; a rerun
with the same configuration, model and pairs reuses them.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ... import interp
from ...records import Parts, expect_config, fingerprint
from ...records.budget import check_time
from ...windtunnel.learned import LearnedCheck
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.models import model_of, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from .config import PatchConfig
from .grid import Condition, conditions, grid_cells
from .pairs import Pairs, PairSet, file_pairs, sula_pairs, tunnel_pairs, unrelated_sources
from .result import PatchingResult
from .scores import Measured, attribution_effect, attribution_score, measured, pair_score
from .verdicts import Verdicts, build_tables, judge


def make_pairs(cfg: PatchConfig, m: interp.InterpModel) -> Pairs:
    """The run's pairs for model ``m`` (:mod:`analyses.patch.pairs`)."""
    if m.task is not None:
        return tunnel_pairs(m.task, cfg.n_pairs, cfg.edit_at, cfg.n_reads, cfg.positions,
                            cfg.seed)
    if cfg.pairs is not None:
        return file_pairs(m, cfg.pairs, cfg.tail)
    return sula_pairs(m, cfg.n_pairs, cfg.tail, cfg.seed, cfg.labels)


def run_patch(cfg: PatchConfig, model: interp.InterpModel | None = None) -> PatchingResult:
    """Run the experiment (module doc); write table.parquet, attribution.parquet,
    summary.json, manifest.json and report.html under ``cfg.out``; return the result."""
    expect_config(cfg, PatchConfig, "run_patch")
    t0 = time.perf_counter()
    m = model_of(cfg, model, "patching")  # an open model's kind and layers, not cfg.model's
    cfg = cfg.sized()
    pairs = make_pairs(cfg, m)
    cells = grid_cells(m, cfg, pairs.positions, min(pairs.evidence.length,
                                                    pairs.null.length if pairs.null else 10**9))
    seed_twin = twin_seed(cfg.model if model is None else model, cfg.twin_seed, cfg.seed)
    with claim(cfg, m) as rd:
        fp = fingerprint(rd.settings, [c.label for c in cells], _pairs_digest(pairs))
        learned = learned_of(m, progress=cfg.progress)
        result = _patch(cfg, m, pairs, cells, fp, learned, seed_twin, t0,
                        release=model is None)
        rd.finish()
    return result


def _pairs_digest(p: Pairs) -> str:
    h = hashlib.sha256()
    for ps in (p.evidence, p.null):
        if ps is not None:
            h.update(repr((ps.clean, ps.corrupt, ps.reads)).encode())
            for t in (ps.p_clean, ps.p_corrupt, ps.good, ps.bad):
                if t is not None:
                    h.update(t.numpy().tobytes())
    return h.hexdigest()


class Patcher:
    """Runs (or reuses) each condition's activation patching for one model."""

    def __init__(self, cfg: PatchConfig, pairs: Pairs, cells: list[interp.PatchCell],
                 parts: Parts, fp: str) -> None:
        self.cfg, self.pairs, self.cells, self.parts, self.fp = cfg, pairs, cells, parts, fp
        self.rows, self.partner = unrelated_sources(pairs.evidence, cfg.seed)
        if self.rows.size < 2:
            raise ExperimentError(
                f"only {self.rows.size} of {len(pairs.evidence)} evidence pairs share their "
                "token length with another pair; the unrelated-source control patches from "
                "another pair's clean prompt of the same length: give more pairs")
        self.reused = 0

    def inputs(self, c: Condition) -> tuple[list, list, PairSet, np.ndarray]:
        """(targets, sources, the pair set scored, which evidence pairs they are)."""
        ev = self.pairs.evidence
        if c.pairs == "unrelated_source":
            sub = ev.subset(self.rows)
            tgt = sub.corrupt if c.direction == "denoising" else sub.clean
            return tgt, [ev.clean[int(j)] for j in self.partner], sub, self.rows
        ps = self.pairs.null if c.pairs == "bayes_null" else ev
        assert ps is not None
        tgt, src = interp.patch_roles(ps.clean, ps.corrupt, c.direction)  # type: ignore[arg-type]
        return tgt, src, ps, np.arange(len(ps))

    def run(self, m: interp.InterpModel, c: Condition, refs: dict[str, torch.Tensor],
            ) -> Measured:
        tgt, src, ps, idx = self.inputs(c)
        hit = self.parts.get(c.key, self.fp)
        if hit is not None:
            self.reused += 1
            r = interp.PatchResult("activation", tuple(self.cells), tuple(hit["metrics"]),
                                   torch.from_numpy(hit["values"]),
                                   torch.from_numpy(hit["target"]),
                                   torch.from_numpy(hit["source"]))
            return measured(r, c.direction, idx)
        ref = refs["null" if c.pairs == "bayes_null" else "evidence"]
        if c.pairs == "unrelated_source":
            ref = ref[torch.as_tensor(idx)]
        score = pair_score(ps, ref, hypotheses_only=m.task is not None)
        r = interp.activation_patch(m, tgt, src, self.cells, score, read_positions=ps.reads,
                                    batch_size=self.cfg.batch_size, progress=self.cfg.progress)
        self.parts.put(c.key, self.fp, values=r.values.numpy(), target=r.target.numpy(),
                       source=r.source.numpy(), metrics=list(r.metrics))
        return measured(r, c.direction, idx)

    def attribution(self, m: interp.InterpModel, direction: str) -> np.ndarray:
        """[C, N] attribution estimates of the evidence effects (reused where finished)."""
        key = f"attribution-{direction}"
        hit = self.parts.get(key, self.fp)
        if hit is not None:
            return np.asarray(hit["effect"])
        ev = self.pairs.evidence
        tgt, src = interp.patch_roles(ev.clean, ev.corrupt, direction)  # type: ignore[arg-type]
        r = interp.attribution_patch(m, tgt, src, self.cells, attribution_score(ev, direction),
                                     read_positions=ev.reads, batch_size=self.cfg.batch_size,
                                     progress=self.cfg.progress)
        eff = attribution_effect(r, direction)
        self.parts.put(key, self.fp, effect=eff)
        return eff


def references(m: interp.InterpModel, pairs: Pairs, batch_size: int) -> dict[str, torch.Tensor]:
    """The clean run's logits at the reads [N, R, V] of each pair set, for model ``m``."""
    out = {"evidence": interp.read_logits(m, pairs.evidence.clean, pairs.evidence.reads,
                                          batch_size)}
    if pairs.null is not None:
        out["null"] = interp.read_logits(m, pairs.null.clean, pairs.null.reads, batch_size)
    return out


def _patch(cfg: PatchConfig, m: interp.InterpModel, pairs: Pairs,
           cells: list[interp.PatchCell], fp: str, learned: LearnedCheck | None,
           seed_twin: int, t0: float, release: bool) -> PatchingResult:
    patcher = Patcher(cfg, pairs, cells, Parts(Path(cfg.out) / "parts"), fp)
    conds = conditions(cfg.directions, pairs.null is not None)
    t_ref = time.perf_counter()
    refs = references(m, pairs, cfg.batch_size)
    todo = [c for c in conds if patcher.parts.get(c.key, fp) is None]
    # a patched pass starts at the cell's layer: at least one layer of a clean pass
    check_time((time.perf_counter() - t_ref) / max(len(refs), 1) / max(m.n_layers, 1),
               len(todo) * len(cells), f"patching {len(cells):,} cells under {len(todo)} "
               "conditions", "--n-pairs, --layers or --sites", unit="patched passes",
               error=ExperimentError)
    got: dict[str, Measured] = {}
    attribution: dict[str, np.ndarray] = {}
    for c in [c for c in conds if c.model == "trained"]:
        got[c.key] = patcher.run(m, c, refs)
    if cfg.attribution:
        for d in cfg.directions:
            attribution[d] = patcher.attribution(m, d)
    twin_conds = [c for c in conds if c.model == "random_init"]
    if any(patcher.parts.get(c.key, fp) is None for c in twin_conds):
        twin = interp.random_init_twin(m, seed=seed_twin, release_model=release)
        twin_refs = references(twin, pairs, cfg.batch_size)
    else:  # every twin condition is reused: no twin to build
        twin, twin_refs = m, {}
    for c in twin_conds:
        got[c.key] = patcher.run(twin, c, twin_refs)
    verdicts = judge(cfg, pairs, cells, got, attribution)
    result = _result(cfg, m, pairs, cells, conds, verdicts, learned, seed_twin,
                     patcher.reused, t0)
    _write(cfg, m, result, verdicts)
    return result


def _result(cfg: PatchConfig, m: interp.InterpModel, pairs: Pairs,
            cells: list[interp.PatchCell], conds: list[Condition], v: Verdicts,
            learned: LearnedCheck | None, seed_twin: int, reused: int,
            t0: float) -> PatchingResult:
    from .scores import DEFINITIONS

    ev = pairs.evidence
    task = m.task.name if m.task is not None else ("sula" if pairs.source == "sula"
                                                   else "free pairs")
    n_pairs = {"evidence": len(ev), "unrelated_source": len(v.unrelated_rows)}
    if pairs.null is not None:
        n_pairs["bayes_null"] = len(pairs.null)
    return PatchingResult(
        model=m.info.name, source=pairs.source, task=task, n_layers=m.n_layers,
        sites=list(dict.fromkeys(c.kind for c in cells)), directions=list(cfg.directions),
        positions=list(pairs.positions), reads=list(ev.reads) if ev.reads else None,
        edit_position=pairs.edit_position, n_pairs=n_pairs, n_cells=len(cells),
        conditions=[c.key for c in conds], metric=v.metric, kinds=v.kinds, tests=v.tests,
        attribution=v.agreement, evidence_scale=v.evidence_scale,
        null_max_abs_effect=v.null_max, null_own_response=v.null_own,
        null_tolerance=v.null_tolerance,
        twin_best_recovered_fraction=v.twin_best_rf, definitions=dict(DEFINITIONS),
        learned=learned, quick=cfg.quick, seed=cfg.seed, twin_seed=seed_twin,
        labels=list(pairs.labels) if pairs.labels else None, dropped=dict(pairs.dropped or {}),
        reused_conditions=reused, wall_s=round(time.perf_counter() - t0, 2))


def _write(cfg: PatchConfig, m: interp.InterpModel, result: PatchingResult,
           v: Verdicts) -> None:
    from .report import write_report

    tables: dict[str, Any] = build_tables(v)
    write_run(cfg, result, model=m, tables=tables,
              report=lambda path, manifest: write_report(path, result, tables, manifest))
