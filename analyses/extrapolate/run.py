"""``bayesgeom extrapolate``: train one model per positional scheme on the long-context
retrieval tunnel at length L, then evaluate each at L × m for every multiple m.

Training: :func:`windtunnel.training.train` on ``long_recall`` (``--length`` L, ``--noise``,
key and value vocabularies), one run per ``--archs`` entry under ``OUT/train/<arch>`` (resumed
or reused like any run). Every run has the same task, so position tables are sized for the
longest evaluation (``max_length`` = L × max m); the learned-absolute model's rows beyond L are
never trained, which is what "learned absolute" extrapolation means.

Evaluation, per (arch, m): ``--n-eval`` held-out sequences of L × m tokens
(:func:`windtunnel.long_eval.score_sequences`: :meth:`LongRecallTask.sample_at` on the
evaluation stream), read through :func:`windtunnel.long_eval.chunked_logits` (KV cache,
``--chunk`` queries at a time, so memory is O(chunk × length)), scored over the hypothesis
slice against the exact posterior
(:func:`windtunnel.metrics.calibration_stats`): accuracy, KL(p_Bayes ‖ p_model) and the
per-sample entropy MAE, both in bits (Paper I's per-sample definition). Controls in every row:
the Bayes accuracy (the expected accuracy of the exact posterior's argmax on the same
sequences, mean of max_h p_Bayes: the ceiling at that length) and chance (1 / V). Each
finished cell is a :class:`records.Parts` part.

**Extrapolation ratio** (our definition): the largest m such that the accuracy at every
multiple up to m stays within ``--tolerance`` (absolute) of the accuracy at m = 1, i.e. the
longest length still within tolerance ÷ L. The BAM paper's claim ("accurate retrieval at 500×
the training length", arXiv 2505.22842) is printed beside the table.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from ...records import Parts, file_sha256, fingerprint
from ...records.options import expect_config
from ...windtunnel import load_run, make_token_task
from ...windtunnel.long_eval import score_sequences
from ...windtunnel.training import train
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from .config import SCHEMES, ExtrapolateConfig  # noqa: F401 (re-exported)
from .result import BAM_CLAIM, ExtrapolateResult, SchemeSummary


def evaluate_at(model: torch.nn.Module, task, length: int, cfg: ExtrapolateConfig,
                ) -> dict[str, float]:
    """One cell's numbers (module doc) at ``length`` tokens: the means of
    :func:`windtunnel.long_eval.score_sequences`."""
    _, s = score_sequences(model, task, length, cfg.n_eval, cfg.eval_batch, cfg.chunk,
                           cfg.seed)
    return {"accuracy": float(s["correct"].mean()), "kl_bits": float(s["kl_bits"].mean()),
            "entropy_mae_bits": float(s["entropy_abs_err_bits"].mean()),
            "bayes_entropy_bits": float(s["h_bayes_bits"].mean()),
            "bayes_accuracy": float(s["bayes_max"].mean()), "chance": 1.0 / task.n_hypotheses}


def extrapolation_ratio(accuracy: dict[int, float], tolerance: float) -> int:
    """The largest m whose accuracy, and every smaller multiple's, is within ``tolerance`` of
    the accuracy at m = 1 (module doc)."""
    base, best = accuracy[1], 1
    for m in sorted(accuracy):
        if accuracy[m] < base - tolerance:
            break
        best = m
    return best


def run_extrapolate(cfg: ExtrapolateConfig) -> ExtrapolateResult:
    """Train, evaluate and write table.parquet, summary.json, manifest.json, report.html."""
    expect_config(cfg, ExtrapolateConfig, "run_extrapolate")
    cfg.check()
    t0 = time.perf_counter()
    task = make_token_task("long_recall", **cfg.task_params())
    out = Path(cfg.out)
    with claim(cfg) as rd:
        rows, parts = [], Parts(out / "cells")
        bar = tqdm(total=len(cfg.archs) * (1 + len(cfg.multiples)), desc="extrapolation",
                   disable=not cfg.progress)
        for arch in cfg.archs:
            bar.set_postfix_str(f"train {arch}")
            tr = train(cfg.train_config(arch), out / "train" / arch, progress=False)
            bar.update()
            run = load_run(tr.out)
            model = run.model.to(cfg.device or "cpu").eval()
            digest = file_sha256(tr.out / "model" / "model.safetensors")
            for m in cfg.multiples:
                bar.set_postfix_str(f"{arch} × {m}")
                fp = fingerprint(arch, m, cfg.length * m, cfg.n_eval, cfg.seed, digest)
                got = parts.get(f"{arch}-x{m}", fp)
                if got is None:
                    with torch.inference_mode():
                        cell = evaluate_at(model, task, cfg.length * m, cfg)
                    parts.put(f"{arch}-x{m}", fp, cell=cell)
                else:
                    cell = got["cell"]
                rows.append({"arch": arch, "multiple": m, "length": cfg.length * m, **cell})
                bar.update()
        bar.close()
        table = pd.DataFrame(rows)
        res = _summarise(cfg, table, time.perf_counter() - t0)
        _write(cfg, res, table)
        rd.finish()
    return res


def _summarise(cfg: ExtrapolateConfig, table: pd.DataFrame, wall: float,
               ) -> ExtrapolateResult:
    schemes = []
    for arch, g in table.groupby("arch", sort=False):
        accs = dict(zip(g["multiple"].astype(int), g["accuracy"], strict=True))
        schemes.append(SchemeSummary(
            arch=str(arch), accuracy_at_1=float(accs[1]),
            accuracy_at_max=float(accs[max(accs)]),
            ratio=extrapolation_ratio(accs, cfg.tolerance)))
    return ExtrapolateResult(
        length=cfg.length, multiples=list(cfg.multiples), tolerance=cfg.tolerance,
        noise=cfg.noise, steps=cfg.steps, preset=cfg.preset, n_eval=cfg.n_eval,
        schemes=schemes, bam_claim=BAM_CLAIM, wall_s=round(wall, 1),
        chance=float(table["chance"].iloc[0]))


def _write(cfg: ExtrapolateConfig, res: ExtrapolateResult, table: pd.DataFrame) -> None:
    from .report import write_report

    write_run(cfg, res, dtype="float32", tables={"table.parquet": table, "table.csv": table},
              report=lambda path, manifest: write_report(path, res, table, manifest))
