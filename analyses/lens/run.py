"""``bayesgeom lens``: where in the network the exact posterior becomes decodable, and where the
model's answer forms, read out of every layer's residual stream (issue 37).

Prompts with an exact posterior p* over K hypothesis tokens: a wind tunnel's own task
(``--n-train`` and ``--n-test`` held-out sequences of streams (seed, EVAL, 1) and (seed,
EVAL, 0), read at every prediction position), or, for a text model, SULA's main condition
(:mod:`windtunnel.sula`; one draw of ``--ks`` prompts split within each k into held-out and
training prompts, read at the last token, p* over the two label words). At every depth
(:data:`analyses.lens.result.DEFINITIONS`: the embeddings, then each block's output) the rows
[prompts x positions, D] come from :func:`interp.lens.read_residuals` and are read out by
(:mod:`interp.lens`):

* the **logit lens** -- the model's own final norm and unembedding, checked to reproduce the
  model's logits at the last depth (:func:`interp.lens.check_readout`);
* the **Bayes lens** -- an affine translator per depth fitted on the training prompts to the
  exact posterior (KL(p* ‖ lens), bits), then the same readout;
* the **tuned lens** -- the same translator fitted to the model's own final output instead.

Each is scored on the held-out prompts by KL to p*, KL to the model's final output and entropy
MAE against p* (bits), with BCa intervals over the held-out prompts; beside the same analysis
on the random-init twin (its own lenses fitted on its own residual stream) and a position-only
baseline (the mean p* of the training rows at each position). A wind tunnel's verdicts stand
behind its learned check (:func:`analyses.kit.learned.gate`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from ... import interp
from ...interp import lens as L
from ...records.budget import check_time
from ...records.options import expect_config
from ...records.progress import tqdm
from ...windtunnel.seeds import Purpose, stream
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.models import model_of, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.sula import pick_labels, sula_prompts
from .config import LensConfig
from .result import LensResult, LensScore
from .scores import decodable_depth, lens_score, position_mean, stays_within

#: the lenses fitted per depth: name -> what the translator is fitted to
FITTED = {"bayes": "p*", "tuned": "final"}


@dataclass(frozen=True, eq=False)
class LensData:
    """The prompts of a run: ``train`` / ``test`` (token-id tensors or texts), the read
    ``positions``, the hypothesis token ids ``hyp_ids`` [K] (and their names), and p* per row
    ``p_train`` [N_train x Q, K], ``p_test`` (prompt-major, then position order)."""

    source: str
    task: str
    train: torch.Tensor | list[str]
    test: torch.Tensor | list[str]
    positions: str | tuple[int, ...]
    hyp_ids: list[int]
    hypotheses: list[str]
    p_train: np.ndarray
    p_test: np.ndarray
    ks: list[int]


def lens_data(m: interp.InterpModel, cfg: LensConfig) -> LensData:
    """The run's prompts (module doc) for ``m``: its task's, or SULA's for a text model."""
    task = getattr(m, "task", None)
    if task is not None and getattr(task, "hyp_slice", None) is not None:
        if cfg.task not in (None, task.name):
            raise ExperimentError(f"this wind tunnel was trained on {task.name!r}; it cannot "
                                  f"run task {cfg.task!r} (use --task {task.name} or leave it "
                                  "out)")
        tr = task.sample(cfg.n_train, stream(cfg.seed, Purpose.EVAL, 1))
        te = task.sample(cfg.n_test, stream(cfg.seed, Purpose.EVAL, 0))
        hyp = list(range(task.hyp_slice.start, task.hyp_slice.stop))

        def rows(b: object) -> np.ndarray:
            post = b.dense_posterior().double().numpy()  # type: ignore[attr-defined]
            return post.reshape(-1, post.shape[-1])

        return LensData("wind tunnel", task.name, tr.input_ids, te.input_ids,
                        tuple(int(q) for q in tr.query_pos), hyp, [str(t) for t in hyp],
                        rows(tr), rows(te), [])
    if m.tokenizer is None:
        raise ExperimentError(f"{m.info.name} has neither a wind tunnel's task nor a tokenizer: "
                              "no prompt with an exact posterior to read it on")
    ks = list(cfg.ks)
    n_tr, n_te = (-(-n // len(ks)) for n in (cfg.n_train, cfg.n_test))
    lab, rem, ids = pick_labels(m.tokenizer, cfg.labels)
    pp = sula_prompts("main", ks=ks, n_per_k=n_tr + n_te, alpha=cfg.alpha, seed=cfg.seed,
                      labels=lab, remap_labels=rem, ids=ids)
    in_k = np.arange(len(pp)) % (n_tr + n_te)  # k-major: the index within each k
    test, train = np.flatnonzero(in_k < n_te), np.flatnonzero(in_k >= n_te)
    texts = [str(t) for t in pp.prompts]
    return LensData("SULA", "sula", [texts[i] for i in train], [texts[i] for i in test],
                    "last", [ids[w] for w in lab], list(lab), pp.bayes[train], pp.bayes[test], ks)


def condition_scores(mc: interp.InterpModel, condition: str, data: LensData,
                     layers: list[int], cfg: LensConfig, bar: tqdm,
                     ) -> tuple[list[LensScore], float, dict[str, np.ndarray]]:
    """Every lens of one model at every depth (module doc), its readout check, and the rows'
    prompt index, position and final output (``test_*`` / ``train_*``)."""
    ro = L.readout(mc, data.hyp_ids)
    diff = L.check_readout(mc, data.test[:4], ro)
    kw = {"batch_size": cfg.batch_size, "progress": cfg.progress, "seed": cfg.seed}
    R = L.read_residuals(mc, data.train, data.positions, layers, **kw)
    S = L.read_residuals(mc, data.test, data.positions, layers, **kw)
    sites = L.lens_sites(mc, layers)
    final = {k: L.lens_log_probs(X[sites[-1]], ro).exp().double().numpy()
             for k, X in (("train", R), ("test", S))}
    idx = S["prompt_index"].numpy()
    targets = {"p*": torch.as_tensor(data.p_train), "final": torch.as_tensor(final["train"])}
    out = []
    for s in sites:
        depth = L.site_depth(s)
        lq = L.lens_log_probs(S[s], ro).double().numpy()
        out.append(lens_score(condition, "logit", depth, s, lq, data.p_test, final["test"],
                              idx, cfg.n_boot, cfg.seed))
        for name, target in FITTED.items():
            t0 = time.perf_counter()
            fit = L.fit_translator(R[s], targets[target], ro, steps=cfg.steps, l2=cfg.l2)
            if bar.n == 0:  # the first fit times the rest
                check_time(time.perf_counter() - t0, bar.total, f"fitting {bar.total} "
                           "translators", "--steps, --layers or --n-train", "fits",
                           ExperimentError)
            lq = L.lens_log_probs(S[s], ro, fit.translator).double().numpy()
            out.append(lens_score(condition, name, depth, s, lq, data.p_test, final["test"],
                                  idx, cfg.n_boot, cfg.seed, fit.kl_bits, fit.iterations))
            bar.update()
    rows = {"test_index": idx, "test_position": S["position"].numpy(),
            "train_position": R["position"].numpy(), "test_final": final["test"]}
    if not np.array_equal(idx, np.sort(idx)):
        raise AssertionError("capture returned rows out of prompt-major order")
    return out, diff, rows


def baseline_scores(data: LensData, rows: dict[str, np.ndarray], sites: list[str],
                    cfg: LensConfig) -> tuple[list[LensScore], str]:
    """The position-only baseline, scored at every depth like a lens (the same numbers), and
    which estimate it is (:func:`analyses.lens.scores.position_mean`)."""
    q, how = position_mean(rows["train_position"], data.p_train, rows["test_position"])
    one = lens_score("position_only", "position_mean", 0, "", np.log(q), data.p_test,
                     rows["test_final"], rows["test_index"], cfg.n_boot, cfg.seed)
    return [LensScore(**{**asdict(one), "depth": L.site_depth(s), "site": s})
            for s in sites], how


def run_lens(cfg: LensConfig, model: interp.InterpModel | None = None) -> LensResult:
    """Run the analysis (module doc); write table.parquet (one row per condition x lens x
    depth), summary.json, manifest.json and report.html under ``cfg.out``."""
    expect_config(cfg, LensConfig, "run_lens")
    t0 = time.perf_counter()
    run = cfg.sized()
    m = model_of(cfg, model)  # an open model's kind and layers, not cfg.model's
    data = lens_data(m, run)
    layers = sorted(set(interp.resolve_layers(cfg.layers, m.n_layers)) | {m.n_layers - 1})
    sites = L.lens_sites(m, layers)
    with claim(cfg, m) as rd:
        learned = learned_of(m, progress=cfg.progress)  # a tunnel's verdicts stand behind it
        tseed = twin_seed(cfg.model, cfg.twin_seed, cfg.seed)
        bar = tqdm(total=2 * len(sites) * len(FITTED), desc="lens fits",
                   disable=not cfg.progress)
        scores, trained_rows, diffs = [], None, {}
        for c in ("trained", "random_init"):
            # a model this run opened is dropped once read: the twin never sits beside it
            mc = m if c == "trained" else interp.random_init_twin(
                m, seed=tseed, release_model=model is None)
            got, diffs[c], rows = condition_scores(mc, c, data, layers, run, bar)
            scores += got
            if c == "trained":
                trained_rows = rows
        bar.close()
        assert trained_rows is not None
        base, how = baseline_scores(data, trained_rows, sites, run)
        scores += base
        depths = [L.site_depth(s) for s in sites]
        res = LensResult(
            model=m.info.name, task=data.task, source=data.source, n_layers=m.n_layers,
            d_model=m.d_model, depths=depths, sites=sites, hypotheses=data.hypotheses,
            n_train=len(data.train), n_test=len(data.test), n_train_rows=len(data.p_train),
            n_test_rows=len(data.p_test), steps=run.steps, l2=run.l2, n_boot=run.n_boot,
            formed_bits=run.formed_bits, seed=run.seed, twin_seed=tseed,
            readout_max_abs_diff=diffs, scores=scores,
            decodable_depth=decodable_depth(scores, depths),
            posterior_depth=stays_within(scores, depths, "bayes", "kl_posterior",
                                         run.formed_bits),
            answer_depth={lens: stays_within(scores, depths, lens, "kl_final", run.formed_bits)
                          for lens in ("logit", "tuned")},
            position_baseline=how, ks=data.ks, learned=learned, quick=cfg.quick,
            wall_s=round(time.perf_counter() - t0, 2))
        _write(cfg, m, res)
        rd.finish()
    return res


def tidy_table(res: LensResult) -> pd.DataFrame:
    """One row per condition x lens x depth (:class:`LensScore`'s columns), with the model
    and task."""
    return pd.DataFrame([asdict(s) for s in res.scores]).assign(model=res.model, task=res.task)


def _write(cfg: LensConfig, m: interp.InterpModel, res: LensResult) -> None:
    from .report import write_report

    table = tidy_table(res)
    write_run(cfg, res, model=m, tables={"table.parquet": table},
              report=lambda path, manifest: write_report(path, res, table, manifest))
