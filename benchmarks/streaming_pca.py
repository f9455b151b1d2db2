"""Streaming PCA (probes.StreamingPCA) vs scikit-learn PCA: agreement, wall time, peak memory.

The data (default 200,000 × 512 float32, a planted 32-dim spectrum + isotropic noise + an
offset) is generated in seeded chunks, so every method sees identical rows:

* ``streaming`` — probes.StreamingPCA fed chunk by chunk; never holds the data (float64 mean and
  scatter only);
* ``sklearn`` — the chunks are written into one preallocated float32 array, then
  ``sklearn.decomposition.PCA(n_components=k)`` (solver ``auto``; reported) fits it;
* ``incremental`` — ``sklearn.decomposition.IncrementalPCA`` fed the same chunks
  (scikit-learn's own streaming PCA; skip with ``--no-incremental``).

Each method runs in its own fresh Python process, so peak memory is not polluted by the others.
Memory is reported two ways: the tracemalloc peak (Python and numpy heap allocations made during
the run; BLAS/LAPACK workspaces are not traced) and the growth of the process's peak RSS
(``ru_maxrss``) over its value after imports. Wall time covers generation + fit; ``fit_s``
excludes generation. Agreement with the streaming fit (top k components): largest absolute
difference of explained-variance ratios, largest relative eigenvalue difference, and the
largest principal angle between the top-k subspaces.

    python benchmarks/streaming_pca.py                       # 200k × 512, k = 10
    python benchmarks/streaming_pca.py --rows 20000 --quick  # small smoke run
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bayesgeom.probes import StreamingPCA, principal_angles  # noqa: E402

LATENT = 32


def chunks(rows: int, dim: int, chunk: int, seed: int) -> Iterator[np.ndarray]:
    """Seeded float32 chunks: z · diag(s) · A + 0.5 · noise + offset, s decaying geometrically."""
    rng = np.random.default_rng(seed)
    mixing = np.linalg.qr(rng.standard_normal((dim, LATENT)))[0].T  # [LATENT, dim] orthonormal
    scales = 10.0 * 0.85 ** np.arange(LATENT)
    offset = rng.normal(0.0, 3.0, size=dim)
    for i, start in enumerate(range(0, rows, chunk)):
        r = np.random.default_rng([seed, i])
        b = min(chunk, rows - start)
        z = r.standard_normal((b, LATENT)) * scales
        x = z @ mixing + 0.5 * r.standard_normal((b, dim)) + offset
        yield x.astype(np.float32)


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def worker(method: str, a: argparse.Namespace) -> dict[str, Any]:
    """Fit one method in this process and return its timings, memory and fitted spectrum."""
    if method != "streaming":
        from sklearn.decomposition import PCA, IncrementalPCA
    rss0 = _maxrss_mib()
    tracemalloc.start()
    t0 = time.perf_counter()
    fit_s = 0.0
    extra: dict[str, Any] = {}
    if method == "streaming":
        spca = StreamingPCA(a.dim)
        for c in chunks(a.rows, a.dim, a.chunk, a.seed):
            t = time.perf_counter()
            spca.partial_fit(c)
            fit_s += time.perf_counter() - t
        t = time.perf_counter()
        res = spca.result(n_components=a.k)
        fit_s += time.perf_counter() - t
        comps, evals, ratios = res.components, res.eigenvalues, res.explained_variance_ratio
    elif method == "sklearn":
        x = np.empty((a.rows, a.dim), dtype=np.float32)
        for i, c in enumerate(chunks(a.rows, a.dim, a.chunk, a.seed)):
            x[i * a.chunk : i * a.chunk + c.shape[0]] = c
        t = time.perf_counter()
        pca = PCA(n_components=a.k, random_state=0).fit(x)
        fit_s = time.perf_counter() - t
        comps, evals = pca.components_, pca.explained_variance_
        ratios = pca.explained_variance_ratio_
        extra["solver"] = getattr(pca, "_fit_svd_solver", None)
    elif method == "incremental":
        ipca = IncrementalPCA(n_components=a.k)
        for c in chunks(a.rows, a.dim, a.chunk, a.seed):
            t = time.perf_counter()
            ipca.partial_fit(c)
            fit_s += time.perf_counter() - t
        comps, evals = ipca.components_, ipca.explained_variance_
        ratios = ipca.explained_variance_ratio_
    else:
        raise ValueError(method)
    wall = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "method": method,
        "wall_s": wall,
        "fit_s": fit_s,
        "tracemalloc_peak_mib": peak / 2**20,
        "rss_growth_mib": _maxrss_mib() - rss0,
        "components": np.asarray(comps, dtype=np.float64).tolist(),
        "eigenvalues": np.asarray(evals, dtype=np.float64).tolist(),
        "ratios": np.asarray(ratios, dtype=np.float64).tolist(),
        **extra,
    }


def agreement(ref: dict[str, Any], other: dict[str, Any]) -> dict[str, float]:
    r_ratio, o_ratio = np.array(ref["ratios"]), np.array(other["ratios"])
    r_eval, o_eval = np.array(ref["eigenvalues"]), np.array(other["eigenvalues"])
    r_comp, o_comp = np.array(ref["components"]), np.array(other["components"])
    return {
        "max_abs_ratio_diff": float(np.abs(r_ratio - o_ratio).max()),
        "max_rel_eigenvalue_diff": float((np.abs(r_eval - o_eval) / r_eval).max()),
        "max_principal_angle_deg": float(principal_angles(r_comp, o_comp).max()),
        "min_component_abs_cos": float(np.abs((r_comp * o_comp).sum(axis=1)).min()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--chunk", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=10, help="components compared")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-incremental", action="store_true", help="skip IncrementalPCA")
    ap.add_argument("--quick", action="store_true", help="20,000 rows")
    ap.add_argument("--out", type=Path, default=Path("runs/bench/streaming_pca.json"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick:
        a.rows = 20_000
    if a.worker:
        print(json.dumps(worker(a.worker, a)))
        return
    methods = ["streaming", "sklearn"] + ([] if a.no_incremental else ["incremental"])
    common = ["--rows", str(a.rows), "--dim", str(a.dim), "--chunk", str(a.chunk)]
    common += ["--k", str(a.k), "--seed", str(a.seed)]
    runs = {}
    for m in methods:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", m, *common],
            check=True,
            capture_output=True,
            text=True,
        )
        runs[m] = json.loads(proc.stdout.strip().splitlines()[-1])
    ref = runs["streaming"]
    data_mib = a.rows * a.dim * 4 / 2**20
    summary: dict[str, Any] = {
        "data": {"rows": a.rows, "dim": a.dim, "dtype": "float32", "size_mib": data_mib},
        "chunk": a.chunk,
        "k": a.k,
        "methods": {
            m: {
                key: r[key]
                for key in ("wall_s", "fit_s", "tracemalloc_peak_mib", "rss_growth_mib", "solver")
                if key in r
            }
            for m, r in runs.items()
        },
        "agreement_vs_streaming": {
            m: agreement(ref, r) for m, r in runs.items() if m != ref["method"]
        },
        "top_ratios": {m: [round(v, 6) for v in r["ratios"][:5]] for m, r in runs.items()},
    }
    from bayesgeom.records import run_manifest, write_json  # torch: parent process only

    summary["manifest"] = run_manifest(seed=a.seed, scikit_learn=metadata.version("scikit-learn"))
    write_json(a.out, summary)
    print(json.dumps({k: v for k, v in summary.items() if k != "manifest"}, indent=2))


if __name__ == "__main__":
    main()
