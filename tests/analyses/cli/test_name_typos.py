"""Every command's name-like options answer a typo in one line before anything loads (issue 38,
cause 8): a model, a prompt set, a task, an architecture, a preset, a condition, a metric, a
site. The options are enumerated from the declarations of every command (the registry's
experiments, ``windtunnel train``/``sample`` and ``capture``): a new option that holds a name
must be added to :data:`TYPOS` (or, holding free text, to :data:`FREE`) or the table test fails.
Options with declared ``choices`` are refused by the parser and are not listed here."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from bayesgeom.analyses.commands.capture import CaptureOptions
from bayesgeom.analyses.commands.windtunnel import SampleOptions
from bayesgeom.analyses.kit.options import _strip_optional
from bayesgeom.records.options import flag_of
from bayesgeom.windtunnel.train_config import TrainConfig

from .declared_options import each_option, experiment_commands
from .test_validate_first import _refused, nothing_expensive  # noqa: F401 (a fixture)

#: command -> (argv before the option, config class); the output folder is added per test
COMMANDS: dict[str, tuple[list[str], type]] = {
    "train": (["windtunnel", "train"], TrainConfig),
    "sample": (["windtunnel", "sample"], SampleOptions),
    "capture": (["capture", "--prompts", "p.txt", "--sites", "logits"], CaptureOptions),
}
COMMANDS.update(experiment_commands())

#: field -> (a typo of a real name, what the one line must say)
TYPOS: dict[str, tuple[str, str]] = {
    "model": ("smolm2", "did you mean 'smollm2'?"), "task": ("bijectoin", "'bijectoin'"),
    "prompts": ("medcal", "did you mean 'gcide-medical'?"),
    "archs": ("llama-bma", "unknown archs llama-bma"), "conditions": ("mian", "mian"),
    "metrics": ("key_orthogonalty", "key_orthogonalty"),
    "presets": ("smal", "unknown presets smal"), "sites": ("attn.x.v", "unknown site 'attn.x.v'"),
    "separation_sets": ("cod,math", "unknown domain(s) cod"),
    "tasks": ("bijectoin", "unknown tasks bijectoin"),
    "directions": ("denoisng", "--directions denoisng: give denoising, noising"),
    "devices": ("cuda0", "cuda0: give cpu, cuda:N or N"),
}
#: (command, field) -> the same, where a command's field of that name holds other names
TYPOS_OF = {("patch", "sites"): ("resid_pe", "--sites resid_pe: give distinct site kinds")}
#: (command, field) of options that hold free text or paths, not names (a Slurm partition or
#: account is the cluster's name, known only to it)
FREE = {("dynamics verify", "prompts"),
        *((c, f) for c in COMMANDS for f in ("device", "labels", "remap_labels", "revision",
                                             "run_dir", "slurm_partition", "slurm_account"))}


def _name_options() -> list[tuple[str, str, str]]:
    """(command, field, flag) of every option whose value is a string (or strings) with no
    declared choices."""
    out = []
    for cmd, _, _, f, opt, tp in each_option(COMMANDS, with_choices=False):
        tp = _strip_optional(tp)
        elem = typing.get_args(tp)[:1] if typing.get_origin(tp) is tuple else (tp,)
        if elem == (str,):
            out.append((cmd, f.name, flag_of(f, opt)))
    return out


NAMES = _name_options()


def test_every_name_like_option_has_a_typo_case():
    missing = [(cmd, name) for cmd, name, _ in NAMES if name not in TYPOS
               and (cmd, name) not in TYPOS_OF
               and (cmd, name) not in FREE]
    assert not missing, f"add a typo (TYPOS) or mark free text (FREE): {missing}"
    covered = {(cmd, name) for cmd, name, _ in NAMES}
    for case in (("geometry", "model"), ("capture", "model"), ("geometry", "prompts"),
                 ("sweep", "archs"), ("extrapolate", "archs"), ("steer", "task"),
                 ("verify", "task"), ("train", "task"), ("capture", "sites")):
        assert case in covered, case


CASES = [pytest.param(cmd, name, flag, id=f"{cmd} {flag}") for cmd, name, flag in NAMES
         if (cmd, name) not in FREE]


@pytest.mark.parametrize("cmd, name, flag", CASES)
def test_a_typo_is_one_line_before_anything_loads(cmd: str, name: str, flag: str, tmp_path,
                                                  nothing_expensive: list[str],  # noqa: F811
                                                  capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text("hello\n")
    argv, _ = COMMANDS[cmd]
    typo, says = TYPOS_OF.get((cmd, name)) or TYPOS[name]
    out: list[Any] = [] if cmd == "sample" else ["--out", "o"]
    line = _refused([*argv, flag, typo, *out], capsys)
    assert says in line, line
    assert nothing_expensive == [] and not (tmp_path / "o").exists()
