import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist (`make test` runs one worker per core) each worker, and every process it
# starts, gets its share of the cores: torch's default of one thread per core in each of N
# workers oversubscribes the machine N times.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(_share))

import pytest

#: the slowest test files, most first (seconds of worker time in a fresh clone's `make test`,
#: 2026-11-27: 266, 188, 113, 94, 49, 34, 30, 26, 25, 24, 20, 19, 18, 15): scheduled first, so that
#: the workers of `make test` (`--dist loadfile --no-loadscope-reorder`: a file stays on one
#: worker, files go in this order) finish together instead of one running a long file alone
SLOWEST_FIRST = (
    "tests/analyses/sweep/test_stop.py",
    "tests/examples/test_notebooks.py",
    "tests/analyses/geometry/test_shards.py",
    "tests/test_quick_starts.py",
    "tests/analyses/sweep/test_run.py",
    "tests/test_doctests.py",
    "tests/analyses/compare/test_run.py",
    "tests/analyses/demo/test_run.py",
    "tests/analyses/geometry/test_run.py",
    "tests/windtunnel/test_run_safety.py",
    "tests/analyses/cli/test_validate_first.py",
    "tests/benchmarks/test_gpu_session.py",
    "tests/test_distribution.py",
    "tests/analyses/geometry/test_memory.py",
)


def pytest_collection_modifyitems(config, items):
    """The files of :data:`SLOWEST_FIRST` first, in its order; every other test after them, in
    collection order (a stable sort: each file's tests stay together and in order)."""
    missing = [f for f in SLOWEST_FIRST if not (config.rootpath / f).is_file()]
    if missing:  # a file renamed or moved: say so, rather than lose the order unnoticed
        raise pytest.UsageError(f"tests/conftest.py SLOWEST_FIRST names no file {missing}")
    rank = {f: i for i, f in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session", autouse=True)
def temp_files_in_basetemp(tmp_path_factory):
    """Every temporary file of the session (the ``Example:`` blocks' ``tempfile.mkdtemp()``, the
    processes the tests start) under pytest's own base directory, which pytest prunes to the last
    three runs, instead of left in the system's temporary directory run after run. Not where that
    directory is so deep (macOS) that a socket path under it (multiprocessing's) would pass the
    limit of about 100 characters."""
    root = str(tmp_path_factory.mktemp("tmp", numbered=False))
    if len(root) > 60:
        yield tempfile.gettempdir()
        return
    old, old_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = root, root
    yield root
    tempfile.tempdir = old
    if old_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old_env


def load_factor() -> float:
    """How many times slower than when idle this machine runs now: its 1-minute load average
    per core, at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@pytest.fixture(scope="session")
def scaled():
    """``scaled(s)``: a wall-clock limit of ``s`` seconds on an idle machine, stretched by the
    load when it is asked (300 s is 1,200 s at load 8 on 2 cores), so that a loaded machine
    is slower, not wrong; the work under the limit is bounded by the test itself."""
    return lambda seconds: seconds * load_factor()


class Killed(Exception):
    """A run cut at a step (``on_step=die_at(n)``), as a crash or Ctrl-C would cut it."""


def die_at(step: int):
    """An ``on_step`` callback of ``train`` that raises :class:`Killed` at ``step``."""

    def die(at: int) -> None:
        if at == step:
            raise Killed

    return die


def tiny_train_config(**kw):
    """A ``TrainConfig`` for the tiny bijection tunnel that trains in a second or two (40 steps,
    checkpoints every 10); ``kw`` overrides any field."""
    from bayesgeom.windtunnel.train_config import TrainConfig

    base = dict(task="bijection", task_params={"V": 6}, preset="tiny", steps=40, batch_size=32,
                lr=5e-3, warmup_steps=5, eval_every=20, eval_size=64, final_eval_size=128,
                log_every=10, ckpt_every=10)
    return TrainConfig(**{**base, **kw})


def assert_left_padding_ignored(model, ids, pad: int = 3) -> None:
    """``model`` [1, T] ``ids`` left-padded by ``pad`` tokens, with the mask and positions counted
    from it, gives the unpadded logits at the real tokens."""
    import torch

    zeros = torch.zeros(1, pad, dtype=torch.long)
    padded = torch.cat([zeros, ids], 1)
    mask = torch.cat([zeros, torch.ones_like(ids)], 1)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = model(ids).logits
        out = model(padded, attention_mask=mask, position_ids=pos).logits[:, pad:]
    torch.testing.assert_close(out, ref)
