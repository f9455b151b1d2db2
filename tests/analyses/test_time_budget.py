"""Sizes that would not end are refused before the work, in one line, exit status 2, with the
estimate and the option to lower (:mod:`records.budget`; issue 38, cause 2).

The static stage is checked on every size-like option the registry's configs declare; the
timed stage with a lowered limit or a fixed unit time, never on this machine's speed."""

from __future__ import annotations

import dataclasses
import importlib
import time
import typing

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.dynamics.em_vs_sgd import budget as em_budget
from bayesgeom.analyses.dynamics.em_vs_sgd.config import EmVsSgdConfig
from bayesgeom.analyses.dynamics.em_vs_sgd.run import run_em_vs_sgd
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.registry import experiments
from bayesgeom.records import budget, declared
from bayesgeom.records.options import _plain_type, flag_of

#: integer options that are not a size of the work, and why (a new integer option must either
#: declare a cost= or be named here)
NOT_SIZES = {
    "seed": "a seed", "twin_seed": "a seed", "sula_seed": "a seed",
    "layer": "a layer index", "layers": "layer indices",
    "batch_size": "how the work is batched, not how much", "score_batch_size": "batching",
    "eval_batch": "batching", "attention_batch": "batching", "chunk": "batching",
    "workers": "processes sharing the work", "plateau_window": "a window of the evaluations",
    "silhouette_pcs": "components of each silhouette, bounded by the model width",
    "key_vocab": "a model dimension (its memory is the model's)",
    "value_vocab": "a model dimension (its memory is the model's)",
    "deep_seeds": "bounded by --seeds (at most 5)",
    "eval_every": "an interval: a larger value is less work",
    "heads": "head indices", "edit_at": "a read index",
    "gpus_per_node": "what a Slurm job asks for", "cpus_per_task": "what a Slurm job asks for",
    "timeout_min": "a Slurm job's time limit (a cell resumes after it)",
}


def _int_options() -> list[tuple[str, type, str, object]]:
    """(command, config class, field, option) for every integer option of every experiment."""
    out = []
    for e in experiments():
        for cls in [e.config, *(c for c, _ in e.nested.values())]:
            hints = typing.get_type_hints(cls)
            for f, opt in declared(cls):
                if _plain_type(hints[f.name]) is int:
                    out.append((e.name, cls, f.name, opt))
    return out


def test_every_size_like_option_of_the_registry_declares_its_cost():
    unwired = [f"{cmd} --{name}" for cmd, _, name, opt in _int_options()
               if opt.cost is None and opt.max is None and name not in NOT_SIZES]
    assert not unwired, f"declare cost= (records.budget) or list in NOT_SIZES: {unwired}"
    costed = {name for *_, name, opt in _int_options() if opt.cost is not None}
    assert {"n_random", "steps", "deep_steps", "pool_size", "n_prompts"} <= costed


@pytest.mark.parametrize("cmd,cls,name,opt",
                         [o for o in _int_options() if o[3].cost is not None],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_each_costed_option_reaches_the_estimator(cmd, cls, name, opt, tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "TIME_LIMIT", 60.0)  # every default fits; the value does not
    if opt.cost.per == "count":
        value: object = tuple(range(1, 70_001))  # 70,000 runs of at least 1 ms: 70 s
    elif opt.cost.per == "sum":
        value = (10**12,)
    else:
        value = 10**12
    cfg = cls(**{name: value})
    if hasattr(cfg, "out"):
        cfg = dataclasses.replace(cfg, out=tmp_path / "out")
    with pytest.raises(ExperimentError) as e:
        cfg.check()
    line = str(e.value)
    assert "\n" not in line and "cannot end within the limit on any machine" in line, line
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    assert line.endswith(f"lower {flag_of(field, opt)}"), line


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("argv,lower", [
    (["steer", "--n-random", "100000000"], "--n-random"),
    (["dynamics", "em-vs-sgd", "--steps", "100000000"], "--steps"),
    (["dynamics", "em-vs-sgd", "--deep", "--deep-steps", "100000000"], "--deep-steps"),
    (["geometry", "--pool-size", "1000000000"], "--pool-size"),
    (["sweep", "--steps", "100000000"], "--steps"),
    (["windtunnel", "train", "--steps", "100000000"], "--steps"),
])
def test_a_size_that_cannot_end_is_refused_before_anything_loads(argv, lower, tmp_path, capsys,
                                                                 scaled):
    t0 = time.perf_counter()
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys)
    assert "cannot end within the limit on any machine" in line and line.endswith(
        f"lower {lower}"), line
    assert time.perf_counter() - t0 < scaled(5) and not (tmp_path / "o").exists()


def test_capture_refuses_too_many_prompts_before_the_model_loads(tmp_path, capsys,
                                                                 monkeypatch):
    monkeypatch.setattr(budget, "TIME_LIMIT", 1.0)  # 20,000 prompts take >= 2 s at the floor
    prompts = tmp_path / "p.txt"
    prompts.write_text("a prompt\n" * 20_000)
    assert main(["capture", "--prompts", str(prompts), "--sites", "attn.-1.v",
                 "--out", str(tmp_path / "store")]) == 2
    line = _one_line(capsys)
    assert line.startswith("bayesgeom: capturing 20,000 prompts cannot end") or (
        "capturing 20,000 prompts cannot end" in line), line
    assert line.endswith("lower the number of prompts") and not (tmp_path / "store").exists()


# ------------------------------------------------------------------ the timed stage
def test_em_vs_sgd_times_one_step_before_claiming_its_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(em_budget, "batch_step_seconds", lambda: 1.0)
    with pytest.raises(ExperimentError, match=r"training 16 protocol batches for 2,000 steps "
                                              r"would take about 8\.9 h .*lower --steps$"):
        run_em_vs_sgd(EmVsSgdConfig(out=tmp_path / "o", steps=2000, progress=False))
    assert not (tmp_path / "o").exists()


def test_em_vs_sgd_times_a_real_step(tmp_path, monkeypatch):
    """32,000 batch steps within 1 s would need a step under 30 us: refused on any machine."""
    monkeypatch.setattr(budget, "TIME_LIMIT", 1.0)
    with pytest.raises(ExperimentError, match=r"would take about .* lower --steps"):
        em_budget.check_budget(EmVsSgdConfig(out=tmp_path / "o", steps=2000))


def test_em_vs_sgd_times_the_deep_variant(tmp_path, monkeypatch):
    monkeypatch.setattr(em_budget, "deep_step_seconds", lambda: 1.0)
    with pytest.raises(ExperimentError, match=r"the deep variant on 5 seeds for 5,000 steps "
                                              r".*lower --deep-steps or --deep-seeds$"):
        em_budget.check_budget(EmVsSgdConfig(out=tmp_path / "o", deep=True, deep_steps=5000))
    em_budget.check_budget(EmVsSgdConfig(out=tmp_path / "o", deep=True, deep_steps=4000))


def test_steer_times_the_clean_pass_before_its_controls(windtunnel_run, tmp_path, monkeypatch):
    """5 conditions x 1,001 directions of at least the clean pass' time, within 1.5 s: refused
    unless the clean pass of 48 prompts took under 0.3 ms."""
    from bayesgeom.analyses.steer.config import SteerConfig
    from bayesgeom.analyses.steer.run import run_steer

    monkeypatch.setattr(budget, "TIME_LIMIT", 1.5)
    with pytest.raises(ExperimentError, match=r"steering against 1,000 controls per layer "
                                              r"would take about .*lower --n-random$"):
        run_steer(SteerConfig(model=str(windtunnel_run), out=tmp_path / "s", n_random=1000,
                              n_prompts=48, progress=False))


class _Clock:
    """perf_counter advancing 1 s a call: every timed unit takes about a second."""

    def __init__(self) -> None:
        self.t = 0.0

    def perf_counter(self) -> float:
        self.t += 1.0
        return self.t


def test_geometry_times_the_first_batch_of_its_pool(windtunnel_run, tmp_path, monkeypatch):
    from bayesgeom.analyses.geometry import entropy_sampler
    from bayesgeom.analyses.geometry.config import GeometryConfig
    from bayesgeom.analyses.geometry.run import run_geometry

    monkeypatch.setattr(entropy_sampler, "time", _Clock())  # 1,000 x 1/32 s: 31 s
    monkeypatch.setattr(budget, "TIME_LIMIT", 10.0)
    with pytest.raises(ExperimentError, match=r"scoring a pool of 1,000 prompts would take "
                                              r"about .*lower --pool-size$"):
        run_geometry(GeometryConfig(model=str(windtunnel_run), out=tmp_path / "g",
                                    progress=False))


def test_capture_times_its_first_batch(windtunnel_run, monkeypatch):
    from bayesgeom import interp
    from bayesgeom.analyses.kit.models import open_model
    clock_module = importlib.import_module("bayesgeom.interp.prompt_count")

    model = open_model(str(windtunnel_run))
    prompts = model.task.sample(64, 0).input_ids
    monkeypatch.setattr(clock_module, "time", _Clock())
    monkeypatch.setattr(budget, "TIME_LIMIT", 60.0)  # 64 prompts of about 1/8 s each: 8 s
    interp.capture(model, prompts, ["resid_post.-1"], batch_size=8, progress=False)
    monkeypatch.setattr(budget, "TIME_LIMIT", 1.0)
    with pytest.raises(interp.InterpError, match=r"capturing 64 prompts would take about "
                                                 r".*lower the number of prompts$"):
        interp.capture(model, prompts, ["resid_post.-1"], batch_size=8, progress=False)
