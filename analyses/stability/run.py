"""``bayesgeom stability``: how a wind-tunnel model's calibration, accuracy, attention and key
geometry hold up as the sequence grows past its training length, a fitted accuracy decay
curve and the critical length with its bootstrap interval.

Input: a run trained on ``long_recall`` (the only tunnel whose length can vary:
:meth:`LongRecallTask.with_length`), at training length L; or a text model (default: the
embedded SmolLM2), read on passkey prompts (:mod:`analyses.prompts.passkey`: the key's first
digit among ten, an exact point-mass posterior) with L = ``--base-length`` tokens. Lengths:
``--lengths`` multiples of L (default 1, 2, 5, 10, 20, 50), or ``--max-length`` N for
``--n-lengths`` lengths spaced geometrically from L to N. Per length ℓ, ``--n-eval`` held-out
sequences (:meth:`LongRecallTask.sample_at` on the evaluation stream, batches of
``--eval-batch`` seeded as ``bayesgeom extrapolate`` seeds them, so the same settings read the
same sequences; passkey prompts are seeded from the same streams):

* **accuracy**, **kl_bits** KL(p_Bayes ‖ p_model) and **entropy_mae_bits** |H_model − H_Bayes|
  over the hypothesis slice at the query (:func:`windtunnel.metrics.calibration_stats`, bits),
  read through :func:`windtunnel.long_eval.chunked_logits` (KV cache, ``--chunk`` queries at a
  time: memory O(chunk × ℓ), any length). Controls: the Bayes accuracy (mean max_h p_Bayes,
  the ceiling) and chance 1/V for accuracy; for KL and entropy MAE the uniform predictor's
  value (log2 V − H_Bayes and |log2 V − H_Bayes|, mean over sequences).
* **attention_entropy**: entropy (bits) of the query position's attention row, per layer,
  mean over heads and sequences (:func:`probes.attention_entropy.attention_entropy_bits`), and
  normalised by log2 ℓ (the query sees ℓ keys; 1 = uniform attention, the chance column).
* **key_orthogonality**: ``bayesgeom detect``'s key-frame orthogonality score 1 − mean |cos|
  over pairs of unit-length keys (Paper I's sense, no centring; :mod:`probes.key_frame`) of the
  per-token mean ``attn.L.k`` keys of the value tokens occurring at that length
  (:func:`analyses.detect.run.head_frames`), per layer, mean over kv heads; chance: 1 − E|cos|
  of random Gaussian vectors in R^d (:func:`probes.key_frame.random_abs_cos`).

Attention and keys come from :func:`interp.capture` on full forwards: the patterns need the
eager kernel, whose scores are [``--attention-batch``, H, ℓ, ℓ] float32 per layer (64 MiB per
sequence per layer at ℓ = 2048, H = 4), so both are measured only up to
``--max-attention-length`` and are NaN beyond it, with the reason in ``note``. Both are also
read on the random-init twin (:func:`interp.random_init_twin`; seed ``--twin-seed``, by default
a wind-tunnel run's training seed so it is the run's step 0, else ``--seed``) on the same
sequences: every attention and key number has the twin's beside it.

Decay fit and critical length: :mod:`probes.decay_fit` on accuracy against ℓ (tokens), the
floor fixed at chance, the plateau at most 1; ℓ_c where the fitted accuracy is half way
between its short-length plateau and chance, a lower bound "> ℓ_max" when the measured
accuracy never falls below half way between its value at L and chance; the interval from
``--n-boot`` bootstrap replicates of the per-sequence correctness at each length; it needs
three or more lengths.

Outputs: ``table.parquet``/``.csv`` (tidy: one row per length × metric × layer),
``sequences.parquet`` (per-sequence outcomes, to refit), ``summary.json``
(:class:`StabilityResult`), ``manifest.json``, ``report.html``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from ... import interp
from ...probes.attention_entropy import attention_entropy_bits
from ...probes.decay_fit import CriticalLength, bootstrap_critical_length
from ...records.options import expect_config
from ...windtunnel.long_eval import position_limit, score_sequences
from ...windtunnel.runs import find_run
from ...windtunnel.seeds import Purpose, stream
from ..detect.run import DetectConfig, head_frames
from ..kit.errors import ExperimentError
from ..kit.model_facts import check_with
from ..kit.models import open_model, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.passkey import digit_ids, min_length, passkey_batch
from .config import StabilityConfig
from .result import CriticalLengthSummary, StabilityResult
from .tables import summarise, tidy_rows

#: a text model's passkey hypotheses (the ten digits) and its key frame (most frequent tokens)
PASSKEY_HYPOTHESES = 10
TEXT_FRAME = 32


def eval_lengths(cfg: StabilityConfig, train_length: int) -> list[int]:
    """The evaluated lengths in tokens, ascending (module doc)."""
    if cfg.max_length is None:
        return sorted({train_length * int(m) for m in cfg.lengths})
    if cfg.max_length <= train_length:
        raise ExperimentError(f"--max-length {cfg.max_length} must exceed the training length "
                             f"{train_length}")
    grid = np.geomspace(train_length, cfg.max_length, cfg.n_lengths)
    return sorted({round(float(x)) for x in grid})


def query_attention_entropy(m: interp.InterpModel, tokens: torch.Tensor,
                            cfg: StabilityConfig) -> np.ndarray:
    """Entropy (bits) of the last position's attention row [n, n_layers, n_heads]."""
    sites = [interp.site_name("attn.pattern", L) for L in range(m.n_layers)]
    st = interp.capture(m, tokens, sites, positions="last", batch_size=cfg.attention_batch,
                        progress=False, seed=cfg.seed)
    return np.stack([attention_entropy_bits(st[s].double().numpy()) for s in sites], axis=1)


def key_orthogonality(m: interp.InterpModel, tokens: torch.Tensor, cfg: StabilityConfig,
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer key-frame orthogonality 1 − mean |cos| (mean over kv heads) [n_layers] and its
    chance (random vectors) [n_layers], from the value tokens occurring in ``tokens`` (a text
    model: its :data:`TEXT_FRAME` most frequent tokens; NaN with fewer than 3)."""
    if m.task is not None:
        hyp = m.task.hyp_slice
        seen = sorted(set(torch.unique(tokens).tolist()) & set(range(hyp.start, hyp.stop)))
    else:
        ids, counts = torch.unique(tokens, return_counts=True)
        seen = sorted(ids[counts.argsort(descending=True)][:TEXT_FRAME].tolist())
    nan = np.full(m.n_layers, math.nan)
    if len(seen) < 3:
        return nan, nan
    dc = DetectConfig(seed=cfg.seed, batch_size=cfg.attention_batch, progress=False)
    heads = head_frames(m, tokens.tolist(), seen, list(range(m.n_layers)), "x", dc)
    df = pd.DataFrame([asdict(h) for h in heads]).groupby("layer")
    return df["orthogonality"].mean().to_numpy(), df["chance"].mean().to_numpy()


def score_passkey(m: interp.InterpModel, length: int, cfg: StabilityConfig,
                  ) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
    """:func:`windtunnel.long_eval.score_sequences` for a text model on passkey prompts
    (:mod:`analyses.prompts.passkey`): the posterior is a point mass on the key's first digit,
    so KL = −log2 p_model(digit) and the entropy error is H_model (bits, over the ten digits)."""
    ids, cols = [], {k: [] for k in ("correct", "kl_bits", "entropy_abs_err_bits",
                                     "h_bayes_bits", "bayes_max")}
    for i in range(0, cfg.n_eval, cfg.eval_batch):
        k = min(cfg.eval_batch, cfg.n_eval - i)
        b = passkey_batch(m.tokenizer, length, k, stream(cfg.seed, Purpose.EVAL, 1000 + i))
        logits = m.forward(m.batch(b.tokens.tolist()), logits_to_keep=1)[:, -1]
        logp = torch.log_softmax(logits[:, b.hyp_ids].double(), dim=-1)  # [k, 10]
        h_model = -(logp.exp() * logp).sum(-1) / math.log(2)
        for key, v in (("correct", (logp.argmax(-1) == b.targets).double()),
                       ("kl_bits", -logp.gather(1, b.targets[:, None])[:, 0] / math.log(2)),
                       ("entropy_abs_err_bits", h_model), ("h_bayes_bits", torch.zeros(k)),
                       ("bayes_max", torch.ones(k))):
            cols[key].append(v.double().numpy())
        ids.append(b.tokens)
    return torch.cat(ids), {k: np.concatenate(v) for k, v in cols.items()}


def _measure(m: interp.InterpModel, twin: interp.InterpModel, length: int,
             cfg: StabilityConfig) -> tuple[dict, dict[str, np.ndarray]]:
    """One length's numbers (a dict for :func:`tidy_rows`) and per-sequence outcomes."""
    if m.task is None:
        tokens, seq = score_passkey(m, length, cfg)
    else:
        tokens, seq = score_sequences(m.hf, m.task, length, cfg.n_eval, cfg.eval_batch,
                                      cfg.chunk, cfg.seed)
    cell: dict = {"length": length, "seq": seq, "note": "",
                  "V": m.task.n_hypotheses if m.task is not None else PASSKEY_HYPOTHESES}
    want = set(cfg.metrics)
    if not want & {"attention_entropy", "key_orthogonality"}:
        return cell, seq
    if length > cfg.max_attention_length:
        cell["note"] = (f"attention and keys not measured above --max-attention-length "
                        f"{cfg.max_attention_length} (full eager forward, O(length^2) memory)")
        return cell, seq
    for c, model in (("trained", m), ("random_init", twin)):
        if "attention_entropy" in want:
            cell[f"attn_{c}"] = query_attention_entropy(model, tokens, cfg).mean(axis=(0, 2))
        if "key_orthogonality" in want:
            cell[f"keys_{c}"], cell["keys_chance"] = key_orthogonality(model, tokens, cfg)
    return cell, seq


def run_stability(cfg: StabilityConfig, model: interp.InterpModel | None = None,
                  ) -> StabilityResult:
    """Run the analysis (module doc) on ``cfg.model`` (or an already open ``model``, e.g. in a
    notebook); write its outputs under ``cfg.out`` and return the result."""
    expect_config(cfg, StabilityConfig, "run_stability")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.model)
    task = getattr(m, "task", None)
    if task is not None and task.name != "long_recall":
        raise ExperimentError(f"{m.info.name} was trained on {task.name}: stability needs a "
                             "long_recall run (train one with bayesgeom windtunnel train "
                             "--task long_recall) or a text model")
    if task is None:
        if m.tokenizer is None:
            raise ExperimentError(f"{m.info.name} has neither a wind-tunnel task nor a "
                                 "tokenizer: nothing to read at growing lengths")
        digit_ids(m.tokenizer)  # a tokenizer without single-digit tokens: one line, early
    train_length = int(task.seq_len) if task is not None else cfg.base_length
    lengths = eval_lengths(cfg, train_length)
    if task is None and lengths[0] < min_length(m.tokenizer):
        raise ExperimentError(f"a passkey prompt needs at least {min_length(m.tokenizer)} "
                             f"tokens; raise --base-length (now {cfg.base_length})")
    limit = position_limit(m.hf) if task is not None else m.n_ctx
    if limit is not None and limit < lengths[-1]:
        raise ExperimentError(f"this model's learned position table covers {limit} tokens, not "
                             f"{lengths[-1]}: ask for lengths up to {limit} (--max-length)")
    run = find_run(Path(str(cfg.model))) if cfg.model else None
    arch = run.arch if run is not None else None
    with claim(cfg, m) as rd:
        twin = interp.random_init_twin(m, seed=twin_seed(cfg.model, cfg.twin_seed, cfg.seed))
        cells, seqs = [], []
        with torch.inference_mode():
            for length in tqdm(lengths, desc="stability", disable=not cfg.progress):
                cell, seq = _measure(m, twin, length, cfg)
                cells.append(cell)
                seqs.append(pd.DataFrame({"length": length, "sequence": range(cfg.n_eval),
                                          **seq}))
        table = pd.DataFrame(tidy_rows(cells, train_length, m.n_layers, cfg.metrics))
        crit = None
        if "accuracy" in cfg.metrics and len(lengths) >= 3:  # three parameters are fitted
            crit = bootstrap_critical_length(
                lengths, [c["seq"]["correct"] for c in cells], floor=1.0 / cells[0]["V"],
                n_boot=cfg.n_boot, level=cfg.level, seed=cfg.seed, ceiling=1.0)
        res = StabilityResult(
            model=m.info.name, task=task.name if task is not None else "passkey",
            arch=arch or m.info.family,
            train_length=train_length, lengths=lengths, metrics=list(cfg.metrics),
            n_eval=cfg.n_eval, max_attention_length=cfg.max_attention_length,
            n_layers=m.n_layers, seed=cfg.seed, per_length=summarise(cells, train_length),
            critical_length=None if crit is None else _critical(crit),
            wall_s=round(time.perf_counter() - t0, 2))
        _write(cfg, m, res, table, pd.concat(seqs, ignore_index=True))
        rd.finish()
    return res


def _critical(c: CriticalLength) -> CriticalLengthSummary:
    f = c.fit
    return CriticalLengthSummary(
        metric="accuracy", status=f.status, estimate=c.estimate, lower_bound=c.lower_bound,
        low=c.low, high=c.high, level=c.level, a=f.a, b=f.b, critical_length=f.critical_length,
        floor=f.floor, halfway=f.halfway, rmse=f.rmse, n_boot=c.n_boot,
        n_not_crossed=c.n_not_crossed, n_failed=c.n_failed, text=c.describe(),
        method=c.method)


def _write(cfg: StabilityConfig, m: interp.InterpModel, res: StabilityResult,
           table: pd.DataFrame, seqs: pd.DataFrame) -> None:
    from .report import write_report

    write_run(cfg, res, model=m, tables={"table.parquet": table, "table.csv": table,
                                         "sequences.parquet": seqs},
              report=lambda path, manifest: write_report(path, res, table, manifest))
