"""A Slurm sweep asks for what it needs: the sweep's submitit options reach the ``#SBATCH``
lines of the script submitit writes, read here from a real submission to a stand-in ``sbatch``
(no cluster: ``srun`` and ``sbatch`` are two small scripts on ``PATH``, the ``slurm_here``
fixture, so submitit takes this machine for a Slurm cluster and submits exactly as it would
there); given with the local
backend, where nothing would read them, they are refused in one line."""

from __future__ import annotations

from typing import Any

import pytest

from bayesgeom.analyses.cli import build_parser, main
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.slurm_options import (
    sbatch_problem,
    submitit_executor,
    submitit_parameters,
)
from bayesgeom.analyses.registry import experiments
from bayesgeom.analyses.sweep.config import SweepConfig

pytest.importorskip("submitit")

GRID = ["sweep", "--tasks", "bijection", "--archs", "transformer", "--presets", "tiny",
        "--seeds", "0,1", "--steps", "12", "--eval-every", "12", "--batch-size", "8"]
ASKED = ["--backend", "submitit", "--gpus-per-node", "1", "--slurm-partition", "P",
         "--slurm-account", "A", "--cpus-per-task", "8", "--mem-gb", "32", "--timeout-min", "90",
         "--workers", "2", "--slurm-additional-parameters", '{"constraint": "a100", '
         '"exclusive": true}']


def _config(argv: list[str]) -> Any:
    """The sweep's config from its command line, as ``bayesgeom sweep`` builds it."""
    ns = build_parser().parse_args(argv)
    cfg = next(e for e in experiments() if e.name == "sweep").make_config(ns)
    cfg.check()
    return cfg


def test_the_sbatch_script_requests_the_gpus_partition_and_the_rest(slurm_here, tmp_path):
    from bayesgeom.analyses.sweep.run import cells
    from bayesgeom.analyses.sweep.workers import submit_cells

    cfg = _config([*GRID, *ASKED, "--out", str(tmp_path / "s")])
    ex = submitit_executor(tmp_path / "submitit", submitit_parameters(cfg, cfg.worker_count()))
    assert ex.cluster == "slurm"
    jobs = submit_cells(ex, [(c, tmp_path / c.name) for c in cells(cfg)], None, given=False)
    assert [j.job_id for j in jobs] == ["4242_0", "4242_1"]
    script = jobs[0].paths.submission_file.read_text()
    calls = slurm_here.read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith(".sh")  # one array job for the grid
    lines = set(script.splitlines())
    for line in ("#SBATCH --gpus-per-node=1", "#SBATCH --partition=P", "#SBATCH --account=A",
                 "#SBATCH --cpus-per-task=8", "#SBATCH --mem=32GB", "#SBATCH --time=90",
                 "#SBATCH --array=0-1%2", "#SBATCH --constraint=a100", "#SBATCH --exclusive"):
        assert line in lines, (line, script)


def test_without_the_options_the_script_asks_for_no_gpu(slurm_here, tmp_path):
    """The control: a sweep that names no resources requests none (its 24 h limit aside)."""
    from bayesgeom.analyses.sweep.run import cells
    from bayesgeom.analyses.sweep.workers import submit_cells

    cfg = _config([*GRID, "--backend", "submitit", "--out", str(tmp_path / "s")])
    ex = submitit_executor(tmp_path / "submitit", submitit_parameters(cfg, cfg.worker_count()))
    jobs = submit_cells(ex, [(c, tmp_path / c.name) for c in cells(cfg)], None, given=False)
    script = jobs[0].paths.submission_file.read_text()
    assert "--gpus-per-node" not in script and "--partition" not in script
    assert "#SBATCH --time=1440" in script and "#SBATCH --array=0-1%1" in script


def test_devices_are_refused_on_slurm_before_anything_is_submitted(slurm_here, tmp_path):
    from bayesgeom.analyses.sweep.run import cells
    from bayesgeom.analyses.sweep.workers import submit_cells

    cfg = _config([*GRID, "--backend", "submitit", "--devices", "0,1",
                   "--out", str(tmp_path / "s")])
    ex = submitit_executor(tmp_path / "submitit", submitit_parameters(cfg, 2))
    with pytest.raises(ExperimentError, match="on Slurm each job trains on the GPUs it is given"):
        submit_cells(ex, [(c, tmp_path / c.name) for c in cells(cfg)], None, given=True)
    assert not slurm_here.exists()


@pytest.mark.parametrize("flag, value", [
    ("--gpus-per-node", "1"), ("--cpus-per-task", "4"), ("--mem-gb", "16"),
    ("--timeout-min", "60"), ("--slurm-partition", "P"), ("--slurm-account", "A"),
    ("--slurm-additional-parameters", '{"qos": "high"}')])
def test_a_submitit_option_with_the_local_backend_is_refused(flag, value, tmp_path, capsys):
    assert main([*GRID, flag, value, "--out", str(tmp_path / "X")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and f"{flag} " in err[0], err
    assert "is ignored without --backend submitit" in err[0], err
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("argv, says", [
    (["--gpus-per-node", "-1"], "gpus_per_node must be >= 0"),
    (["--mem-gb", "0"], "mem_gb must be > 0"),
    (["--timeout-min", "0"], "timeout_min must be >= 1"),
    (["--slurm-additional-parameters", "[1]"], "expected an object"),
    (["--slurm-additional-parameters", '{"constraint": ["a100"]}'],
     "constraint must be a string, a number or true"),
    (["--slurm-additional-parameters", '{"partition": "P"}'], "give partition as "
     "--slurm-partition"),
    (["--devices", "gpu0"], "--devices gpu0: give cpu, cuda:N or N"),
    (["--devices", "cuda"], "name each GPU"),
    (["--devices", "0,cuda:0"], "--devices names cuda:0 more than once"),
    (["--devices", "cpu,cpu", "--workers", "3", "--backend", "local"],
     "--workers 3 is more than the 2 device(s)"),
    (["--device", "cuda:1", "--workers", "2", "--backend", "local"],
     "--workers 2 is more than the 1 device(s)"),
    (["--device", "cpu", "--devices", "0,1"], "disagree"),
])
def test_bad_resources_are_one_line(argv, says, tmp_path, capsys):
    assert main([*GRID, "--backend", "submitit", *argv, "--out", str(tmp_path / "X")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "X").exists()


def test_on_slurm_workers_are_the_arrays_parallelism_not_devices(tmp_path):
    """``--device cuda --workers 30`` with submitit: thirty jobs at once, each on its own GPU
    of its own node, is no oversubscription (the local pool's refusal is not applied)."""
    cfg = SweepConfig(out=tmp_path / "s", backend="submitit", device="cuda", workers=30,
                      gpus_per_node=1)
    cfg.check()
    assert submitit_parameters(cfg, cfg.worker_count())["slurm_array_parallelism"] == 30
    with pytest.raises(ExperimentError, match="--workers 30 is more than"):
        SweepConfig(out=tmp_path / "s", device="cuda", workers=30).check()


def test_a_config_files_sbatch_table_is_checked_too(tmp_path):
    """TOML can hold what the JSON flag's parser refuses: the config's check says it."""
    cfg = SweepConfig(out=tmp_path / "s", backend="submitit",
                      slurm_additional_parameters={"gres": {"gpu": 1}})
    with pytest.raises(ExperimentError, match="gres must be a string, a number or true"):
        cfg.check()
    assert sbatch_problem({"qos": "high", "nodes": 1, "exclusive": True}) is None
