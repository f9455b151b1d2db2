"""The GPU session (benchmarks/gpu_session.py) runs end to end on the CPU: its dry run, with
what the GPU machine lacks hidden and bayesgeom imported from the plain checkout, passes in
under a minute, writes what the device lets come back, and needs no wheel beyond those carried;
the carried wheels are what that machine lacks and fit the travel limit with the project."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from importlib.metadata import requires
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_session.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu import wheels  # noqa: E402
from gpu.clock import SessionClock  # noqa: E402

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory, scaled):
    """(CPU seconds, wall seconds, completed process, result folder) of one dry run, as on the
    GPU machine: its missing packages hidden and no editable install."""
    out = tmp_path_factory.mktemp("gpu-session")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, str(SCRIPT), "--dry-run", "--emulate-gpu-machine", "--device", "cpu",
           "--out", str(out)]
    done = subprocess.run(cmd, cwd=tmp_path_factory.getbasetemp(), env=ENV,
                          capture_output=True, text=True, timeout=scaled(300))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done, out


def test_the_dry_run_passes_in_under_a_minute(dry_run):
    """Under a minute of the machine's time (CPU seconds: a loaded, shared machine stretches
    the wall clock: 21–31 s of wall time, 10 CPU seconds, on a 2-core machine at load 8–10,
    2026-11-26)."""
    cpu, wall, done, out = dry_run
    assert done.returncode == 0, f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-4000:]}"
    assert cpu < 60, f"the dry run took {cpu:.0f} CPU seconds ({wall:.0f} s of wall time)"
    s = json.loads((out / "session.json").read_text())
    assert s["dry_run"] and s["passed"] and s["cpu_only"]
    assert {p["status"] for p in s["parts"].values()} == {"done"}


def test_the_results_fit_what_comes_back_from_the_device(dry_run):
    *_, out = dry_run
    files = sorted(p.name for p in out.iterdir())
    s = json.loads((out / "session.json").read_text())
    assert files == sorted(s["files"])
    assert "scale.json" in files
    assert len(files) <= 7  # the device returns 8 files; the console log is the eighth
    assert all((out / f).stat().st_size <= 16 * 2**20 for f in files)


def test_every_family_check_and_dtype_was_compared(dry_run):
    *_, out = dry_run
    from gpu.calls import CALLS
    from gpu.families import FAMILIES

    rows = pd.read_parquet(out / "correctness.parquet")
    assert set(rows["family"]) == {f.name for f in FAMILIES}
    assert set(rows["check"]) == set(CALLS)
    assert set(rows["dtype"]) == {"float32", "bfloat16"}
    assert (rows["status"] == "ok").all() and rows["passed"].dropna().all()
    # every attention family went through the taps; verify in float32 only
    taps = rows[rows["check"] == "attention_taps"]
    assert set(taps["family"]) == {f.name for f in FAMILIES if f.attention}
    assert set(rows.loc[rows["check"] == "dynamics_verify", "dtype"]) == {"float32"}


def test_paper_and_throughput_parts_report_their_numbers(dry_run):
    *_, out = dry_run
    paper = json.loads((out / "paper.json").read_text())
    assert set(paper["runs"]) == {"bijection", "hmm", "assoc_recall"}
    hmm = paper["runs"]["hmm"]
    assert set(hmm["length_generalisation"]) == {"K=30", "K=50"}
    assert set(paper["hmm_controls_K20"]) == {"history-free", "w=2", "w=3", "w=4"}
    for r in paper["runs"].values():
        assert r["steps_done"] == 30 and r["final_eval"]["entropy_mae_bits"] >= 0
        assert r["paper_i"]
    tp = json.loads((out / "throughput.json").read_text())
    assert tp["presets"] and tp["presets"][0]["device_steps_per_s"] > 0


def test_the_scale_part_reads_each_cells_pinned_device_back(dry_run):
    """The dry run's scale part: two sweep cells pinned with ``--devices cpu`` to one worker,
    each one's run record and row naming that device and slot 0; the worker imported the
    session's checkout (its runs record the same commit); the geometry half is left out."""
    *_, out = dry_run
    scale = json.loads((out / "scale.json").read_text())
    sweep = scale["sweep"]
    assert sweep["passed"] and sweep["trained"] == 2 and sweep["expected_device"] == "cpu"
    assert [(c["run_device"], c["row_device"], c["slot"], c["steps_done"])
            for c in sweep["cells"]] == [("cpu", "cpu", 0, sweep["steps"])] * 2
    assert {c["git_commit"] for c in sweep["cells"]} == {sweep["session_git_commit"]}
    assert scale["not_in_dry_run"] == ["geometry"] and not scale["skipped"]
    line = json.loads((out / "session.json").read_text())["scale"]
    assert line["sweep_passed"] and line["sweep_cell_devices"] == ["cpu", "cpu"]


def test_the_geometry_differences_judge_every_row():
    """One worker against this process: equal to float rounding passes; a value past the
    tolerance, a NaN on one side only, a missing row or metric fails."""
    from gpu.scale import KEYS, METRICS, metric_differences

    a = pd.DataFrame([{"prompt_set": "task", "layer": 1, "metric": m, "target": t,
                       "reference": "model", "value": 0.25 + i / 10}
                      for i, m in enumerate(METRICS) for t in ("model_entropy", "x")])
    a.loc[a.index[-1], "value"] = float("nan")  # undefined on both sides: agrees
    near = a.assign(value=a["value"] * (1 + 1e-6))
    d = metric_differences(a, near)
    assert d["agree"] and d["not_close"] == 0 and d["nan_in_both"] == 1
    assert 0 < d["max_abs_diff_named"] < 1e-5
    far = near.copy()
    far.loc[far.index[0], "value"] += 1e-3
    assert not metric_differences(a, far)["agree"]
    assert metric_differences(a, far)["max_abs_diff_by_metric"][METRICS[0]] > 9e-4
    one_nan = near.copy()
    one_nan.loc[one_nan.index[0], "value"] = float("nan")
    d = metric_differences(a, one_nan)
    assert not d["agree"] and d["nan_in_one_only"] == 1
    assert not metric_differences(a, near.iloc[1:])["agree"]  # a row missing
    without = a[a["metric"] != METRICS[0]]
    assert not metric_differences(without, without)["agree"]  # a metric missing
    assert set(KEYS) < set(a.columns)


@pytest.mark.slow
def test_the_scale_geometry_half_runs_on_the_cpu(tmp_path):
    """The half the dry run leaves out (11–22 s here, most of it its worker's start): the committed
    tunnel with one worker pinned to the CPU equals the in-process run, every shard on the
    CPU."""
    from gpu.scale import METRICS, geometry_half

    r = geometry_half("cpu", tmp_path, ROOT)
    assert r["passed"], r
    assert {s["stage"] for s in r["shards"]} == {"score", "capture-task"}
    assert {s["device"] for s in r["shards"]} == {"cpu"}
    assert set(r["max_abs_diff_by_metric"]) == set(METRICS) and r["rows"] >= len(METRICS)


def test_the_default_budgets_add_up_to_the_session():
    """Correctness, throughput, scale (at most 60 s) and every Paper I run with its
    evaluation allowance fit the default budget less the clock's reserve."""
    from gpu.paper import EVAL_ALLOWANCE
    from gpu.session import Plan

    p = Plan.make(False, None, None)
    parts = p.correctness_s + p.throughput_s + p.scale_s
    assert p.scale_s <= 60
    assert parts + sum(s + EVAL_ALLOWANCE for s in p.paper_s.values()) <= p.total_s - 10
    assert p.total_s + 15 <= 8 * 60  # with the script's start-up


def test_the_scale_part_pins_the_sessions_gpu():
    from gpu.scale import pinned_device

    assert [pinned_device(d) for d in ("cuda", "cuda:1", "cpu")] == ["cuda:0", "cuda:1", "cpu"]


def test_the_session_needs_no_wheel_beyond_those_carried(dry_run):
    *_, out = dry_run
    imports = json.loads((out / "session.json").read_text())["imports"]
    assert set(imports["lacking_on_gpu_machine"]) <= set(wheels.WHEELS)
    assert "bayesgeom" in imports["by_this_project"]


def test_the_carried_wheels_are_what_the_gpu_machine_lacks():
    carried = {wheels.normalise(n) for n in wheels.WHEELS}
    assert carried <= set(wheels.LACKING) and not carried & wheels.THERE
    for name in wheels.WHEELS:  # what a carried wheel needs is there already
        needs = [r.split(";")[0] for r in requires(name) or [] if "extra ==" not in r
                 and "python_version <" not in r]
        names = {wheels.normalise(r.split(">")[0].split("<")[0].split("=")[0].strip())
                 for r in needs}
        assert names <= wheels.THERE, (name, names - wheels.THERE)


def test_the_wheels_fit_the_travel_limit_with_the_project():
    """The tree (42 MiB with the committed tunnels, 2026-11-27) and the wheels leave
    :data:`wheels.TRAVEL_HEADROOM` of the device's 64 MiB for what a session carries beside."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to list what travels")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    tree = sum((ROOT / f).stat().st_size for f in listed if f and (ROOT / f).is_file())
    whl = ROOT / ".whl"
    carried = (sum(p.stat().st_size for p in whl.glob("*.whl")) if whl.is_dir()
               else sum(wheels.WHEEL_BYTES.values()))
    assert tree + carried <= wheels.TRAVEL_LIMIT - wheels.TRAVEL_HEADROOM, (tree, carried)


def test_the_wheel_list_is_printed_without_torch():
    done = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT), "--wheels"],
                          env=ENV, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == wheels.requirements()
    assert " torch" not in done.stderr


def test_each_part_gets_its_budget_or_what_is_left():
    c = SessionClock(total_s=100, reserve_s=10)
    assert 89 < c.part("a", 200).left() <= 90
    assert 4 < c.part("b", 5).left() <= 5
    c.start -= 95  # the session's time is spent
    d = c.part("c", 30)
    assert d.over() and d.left() <= 0
    c.record(d, "skipped")
    assert c.parts["c"]["status"] == "skipped"


def test_differences_are_relative_to_the_cpu_and_strict_about_non_finite_entries():
    import torch
    from gpu.correctness import difference

    b = torch.tensor([1.0, -4.0, 2.0])
    assert difference(b + torch.tensor([0.0, 0.0, 0.4]), b) == pytest.approx((0.4, 0.1))
    assert difference(b[:2], b) == (float("inf"), float("inf"))
    nan = torch.tensor([float("nan"), 1.0])
    assert difference(nan, nan) == (0.0, 0.0)
    assert difference(nan, torch.tensor([1.0, 1.0]))[1] == float("inf")


def test_edits_judge_real_positions_and_record_the_padding_apart():
    """A fully masked (padding) row's attention output is undefined: CUDA's bf16 attention
    and the CPU's fill it differently (H200, 2026-11-27), so the edits compare real tokens
    and keep the padding's logits as an unjudged record."""
    import torch
    from gpu.calls import edit_call, prompts
    from gpu.correctness import _model, _rows
    from gpu.families import FAMILIES, build, vocab_of

    fam = next(f for f in FAMILIES if f.name == "llama_gqa")
    hf = build(fam)
    ps = prompts(vocab_of(hf))
    out = edit_call(_model(hf, fam.name, "cpu", torch.float32), ps)
    real, pad = sum(map(len, ps)), len(ps) * max(map(len, ps)) - sum(map(len, ps))
    assert out["clean.logits"].shape[0] == real and out["info.pad.clean.logits"].shape[0] == pad
    wrong = {k: v + 1.0 if k.startswith("info.pad") else v for k, v in out.items()}
    rows = _rows(fam, "float32", "edits", out, [wrong], 0.0)
    assert all(r["passed"] is None for r in rows if r["quantity"].startswith("info.pad"))
    assert all(r["passed"] for r in rows if not r["quantity"].startswith("info."))


def test_a_score_tolerance_widens_to_its_conditioning_and_no_further():
    """Steering's scores are CPU functions of the logits; one that one more rounding of the
    logits moves by a tenth (a correlation over a few near-equal entropies) is judged at
    twice that, not at the dtype's tolerance; a well-conditioned one keeps the dtype's."""
    import torch
    from gpu.correctness import _rows, conditioning
    from gpu.families import FAMILIES

    fam = FAMILIES[0]
    cpu = torch.tensor([0.5, 0.1, 1.0])
    assert conditioning(cpu, torch.tensor([0.0, 0.1, 0.0])) == pytest.approx(0.1)
    assert conditioning(cpu, None) is None
    ref = {"total.scores": cpu, "info.jitter.total.scores": torch.tensor([0.0, 0.1, 0.0])}
    near = {"total.scores": cpu + torch.tensor([0.0, 0.15, 0.0])}
    far = {"total.scores": cpu + torch.tensor([0.0, 0.25, 0.0])}
    judged = lambda runs: next(r for r in _rows(fam, "bfloat16", "steer_pass", ref, [runs], 0.0)  # noqa: E731
                               if r["quantity"] == "total.scores")
    assert judged(near)["passed"] and judged(near)["tolerance"] == pytest.approx(0.2)
    assert not judged(far)["passed"]
    ref["info.jitter.total.scores"] = torch.zeros(3)
    assert judged(near)["tolerance"] == pytest.approx(0.05) and not judged(near)["passed"]


def test_the_paper_runs_can_be_chosen_and_a_wrong_one_is_refused():
    from gpu.session import Plan

    assert list(Plan.make(False, None, 200.0, ("hmm",)).paper_s) == ["hmm"]
    assert Plan.make(False, None, 200.0, ("hmm",)).paper_s["hmm"] == 200.0
    assert Plan.make(False, None, 200.0).paper_s["assoc_recall"] == 40.0
    done = subprocess.run([sys.executable, str(SCRIPT), "--tasks", "hmm,bogus"], env=ENV,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--tasks" in done.stderr.splitlines()[-1]


@pytest.mark.parametrize("args, said", [
    (["--threads", "-1"], "--threads: at least 1"),
    (["--device", "foo"], "--device: cpu, cuda or cuda:N"),
    (["--budget-s", "-5"], "--budget-s: a number of seconds above 0"),
    (["--budget-s", "nan"], "--budget-s: a number of seconds above 0"),
    (["--paper-s", "0"], "--paper-s: a number of seconds above 0"),
    (["--out", "FILE"], "is a file; name a folder"),
])
def test_bad_arguments_are_one_line_before_torch(args, said, tmp_path, capsys):
    """Each is refused by the parser (exit 2, one line), which imports no torch: before the
    change ``--budget-s -5`` reported 'passed' with every part skipped and the others were
    tracebacks."""
    import gpu_session

    (tmp_path / "FILE").write_text("x")
    args = [str(tmp_path / "FILE") if a == "FILE" else a for a in args]
    with pytest.raises(SystemExit) as e:
        gpu_session.parse(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and said in err[-1], err


def test_the_parser_imports_no_torch():
    code = ("import sys; sys.path.insert(0, 'benchmarks'); import gpu_session; "
            "gpu_session.parse(['--dry-run']); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
