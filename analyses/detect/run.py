"""``bayesgeom detect``: the key frame of every head of a model -- how mutually orthogonal its
keys are in Paper I's sense, the headline **orthogonality score** 1 − mean |cos| of the
unit-length keys (no centring), and, under their own names, its isotropy and dimension
utilisation (:mod:`probes.key_frame`) -- beside the random-init twin, random vectors of the
frame's shape (1 − E|cos|, closed form) and, where the frame has more keys than dimensions
(m > d, so it cannot be orthogonal), the Welch ceiling 1 − √((m − d)/(d(m − 1))).

The frame of a head at layer L is one key per hypothesis: the keys read at the site
``attn.L.k`` (before RoPE: content, not position) at every position, averaged per token id.
On a wind tunnel the rows are its hypothesis tokens (``task.hyp_slice``) that occur in
``--n-sequences`` held-out sequences; on an LLM the ``--n-tokens`` most frequent token ids of
the prompts (default: paragraphs of the Python standard library's sources and of
/usr/share/common-licenses, on every machine). Under GQA there is one frame per kv head.
The same tokens and prompts go through :func:`interp.random_init_twin` (the random-init
baseline; for a wind-tunnel run seeded by its training seed unless ``--twin-seed`` is given, so
it is the run's step 0); ``chance`` is the score of m random Gaussian vectors in R^d.
"""

from __future__ import annotations

import time
from dataclasses import asdict

import numpy as np
import pandas as pd

from ... import interp
from ...probes.key_frame import FrameScore, score_frame
from ...records.options import expect_config
from ...records.progress import tqdm
from ...windtunnel.seeds import Purpose, stream
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.models import heads_model_of, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.corpora import CorpusPaths, read_common_licenses, read_python_stdlib
from .config import DetectConfig
from .result import DetectResult, HeadFrame


def builtin_prompts(n: int, max_chars: int = 400) -> list[str]:
    """``n`` paragraphs alternating between Python stdlib sources and common licenses."""
    paths = CorpusPaths()
    pools = []
    for read in (read_python_stdlib, read_common_licenses):
        try:
            paras = [p for d in read(paths) for p in d.text.split("\n\n") if len(p) > 80]
        except Exception:
            paras = []
        pools.append([p[:max_chars] for p in paras])
    out = [p for pair in zip(*pools, strict=False) for p in pair] or pools[0] or pools[1]
    if len(out) < n:
        raise ExperimentError(f"only {len(out)} built-in paragraphs found; lower --n-prompts")
    return out[:n]


def frame_inputs(m: interp.InterpModel, cfg: DetectConfig) -> tuple[list[list[int]], list[int],
                                                                     str]:
    """(token lists, the frame's token ids, frame name)."""
    task = getattr(m, "task", None)
    if task is not None:
        b = task.sample(cfg.n_sequences, stream(cfg.seed, Purpose.EVAL, 0))
        ids = b.input_ids.tolist()
        hyp = range(task.hyp_slice.start, task.hyp_slice.stop)
        seen = sorted({t for row in ids for t in row if t in hyp})
        return ids, seen, "hypothesis tokens"
    tokens, _ = m.encode(builtin_prompts(cfg.n_prompts))
    tokens = [t[:cfg.max_tokens] for t in tokens if len(t) >= 2]
    counts = pd.Series([t for row in tokens for t in row]).value_counts(sort=True)
    top = counts.index[:cfg.n_tokens].tolist()
    return tokens, sorted(int(t) for t in top), "most frequent tokens"


def head_frames(m: interp.InterpModel, tokens: list[list[int]], frame_ids: list[int],
                layers: list[int], condition: str, cfg: DetectConfig) -> list[HeadFrame]:
    """Each layer's and kv head's frame: the mean ``attn.L.k`` key of every frame token."""
    sites = [interp.site_name("attn.k", L) for L in layers]
    st = interp.capture(m, tokens, sites, positions="all", batch_size=cfg.batch_size,
                        progress=cfg.progress, seed=cfg.seed)
    tok = st.token_id.numpy()
    rows_of = [np.flatnonzero(tok == t) for t in frame_ids]
    out = []
    for L, s in zip(layers, sites, strict=True):
        k = st[s].double().numpy()  # [rows, Hkv, dh]
        keys = np.stack([k[r].mean(0) for r in rows_of])  # [m, Hkv, dh]
        for h in range(keys.shape[1]):
            f: FrameScore = score_frame(keys[:, h])
            out.append(HeadFrame(condition=condition, layer=L, head=h, **asdict(f)))
    return out


def run_detect(cfg: DetectConfig, model: interp.InterpModel | None = None) -> DetectResult:
    """Run the detector (module doc); write table.parquet, summary.json, manifest.json and
    report.html under ``cfg.out``."""
    expect_config(cfg, DetectConfig, "run_detect")
    t0 = time.perf_counter()
    m = heads_model_of(cfg, model, ": no key frame to detect")
    layers = interp.resolve_layers(cfg.layers, m.n_layers)
    tokens, frame_ids, frame = frame_inputs(m, cfg)
    if len(frame_ids) < 3:
        raise ExperimentError(f"only {len(frame_ids)} frame token(s) occur (a frame needs 3); "
                              "give more prompts or sequences")
    with claim(cfg, m) as rd:
        learned = learned_of(m, progress=cfg.progress)  # a tunnel's verdicts stand behind it
        heads, tseed = [], twin_seed(cfg.model, cfg.twin_seed, cfg.seed)
        for c, model_c in tqdm([("trained", m), ("random_init", None)], desc="detect",
                               disable=not cfg.progress):
            mc = model_c or interp.random_init_twin(m, seed=tseed)
            heads += head_frames(mc, tokens, frame_ids, layers, c, cfg)
        res = DetectResult(model=m.info.name, frame=frame, n_frame_tokens=len(frame_ids),
                           layers=layers, n_kv_heads=m.geometry.n_kv_heads,
                           d_head=m.geometry.d_head, heads=heads, twin_seed=tseed,
                           wall_s=round(time.perf_counter() - t0, 2), learned=learned)
        _write(cfg, m, res)
        rd.finish()
    return res


def _write(cfg: DetectConfig, m: interp.InterpModel, res: DetectResult) -> None:
    from .report import write_report

    table = pd.DataFrame([asdict(h) for h in res.heads]).assign(model=res.model)
    table = table[[*HeadFrame.KEYS, *(c for c in table.columns if c not in HeadFrame.KEYS)]]
    write_run(cfg, res, model=m, tables={"table.parquet": table},
              report=lambda path, manifest: write_report(path, res, table, manifest))
