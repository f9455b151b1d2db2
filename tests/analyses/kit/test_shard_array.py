"""Shards as a submitit job array (``--launcher submitit``): a geometry run's Slurm requests
reach the ``#SBATCH`` lines of the array script (read from a submission to the stand-in
``sbatch`` of ``slurm_here``), and the options are refused in one line where nothing would
read them. The local executor's real jobs are tested by ``bayesgeom capture``
(``tests/analyses/commands/test_capture_shards.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from bayesgeom.analyses.cli import build_parser, main
from bayesgeom.analyses.kit.shard_array import ArrayPool
from bayesgeom.analyses.kit.shard_pool import Job, ModelSpec
from bayesgeom.analyses.kit.slurm_options import submitit_parameters
from bayesgeom.analyses.registry import experiments

pytest.importorskip("submitit")


def _geometry(argv: list[str]) -> Any:
    """The geometry run's config from its command line, checked, as ``bayesgeom`` builds it."""
    ns = build_parser().parse_args(["geometry", *argv])
    cfg = next(e for e in experiments() if e.name == "geometry").make_config(ns)
    cfg.check()
    return cfg


def _jobs(n: int) -> list[Job]:
    return [Job("score", k, n, (k, k + 1), f"fp{k}", "json:dumps", ModelSpec(None))
            for k in range(n)]


def test_a_geometry_array_requests_the_gpus_and_partition(slurm_here, tmp_path, text_models):
    cfg = _geometry(["--model", str(text_models["llama"]), "--workers", "2",
                     "--launcher", "submitit", "--gpus-per-node", "1", "--slurm-partition", "P",
                     "--cpus-per-task", "4", "--out", str(tmp_path / "g")])
    pool = ArrayPool(cfg.workers, submitit_parameters(cfg, cfg.workers), tmp_path / "submitit")
    jobs = pool.submit(tmp_path / "shards", _jobs(2))
    assert [j.job_id for j in jobs] == ["4242_0", "4242_1"]
    assert len(slurm_here.read_text().splitlines()) == 1  # one array for the stage's shards
    lines = set(jobs[0].paths.submission_file.read_text().splitlines())
    for line in ("#SBATCH --gpus-per-node=1", "#SBATCH --partition=P",
                 "#SBATCH --cpus-per-task=4", "#SBATCH --array=0-1%2"):
        assert line in lines, line


def test_without_requests_the_array_asks_for_no_gpu(slurm_here, tmp_path, text_models):
    """The control: the same array with no resources named requests no GPU or partition."""
    cfg = _geometry(["--model", str(text_models["llama"]), "--workers", "2",
                     "--launcher", "submitit", "--out", str(tmp_path / "g")])
    jobs = ArrayPool(2, submitit_parameters(cfg, 2), tmp_path / "submitit").submit(
        tmp_path / "shards", _jobs(2))
    script = jobs[0].paths.submission_file.read_text()
    assert "--gpus-per-node" not in script and "--partition" not in script


@pytest.mark.parametrize("argv, says", [
    (["--gpus-per-node", "1"], "--gpus-per-node 1 is ignored without --launcher submitit"),
    (["--launcher", "submitit", "--workers", "2", "--devices", "cpu,cpu"],
     "a submitit job runs on the GPUs it is given"),
    (["--launcher", "submitit", "--slurm-additional-parameters", '{"time": 5}'],
     "give time as --timeout-min"),
])
def test_bad_array_options_are_one_line(argv, says, tmp_path, capsys, text_models):
    out = tmp_path / "X"
    assert main(["geometry", "--model", str(text_models["llama"]), *argv,
                 "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and says in err[0], err
    assert not out.exists()
