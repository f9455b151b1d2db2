"""``bayesgeom capture --workers 2``: two spawned workers, each with its own copy of the model,
give the store one process gives (same rows, same shard layout), and a rerun reuses it."""

from __future__ import annotations

import json

import pytest
import torch

from bayesgeom.analyses.cli import main
from bayesgeom.interp import ActivationStore

PROMPTS = ["The capital of France is", "Entropy measures", "A prior", "Attention routes",
           "One two three four five", "Hello"]


def test_two_workers_capture_what_one_does(text_models, tmp_path, capsys):
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n")
    argv = ["capture", "--model", str(text_models["llama"]), "--prompts", str(prompts),
            "--sites", "attn.-1.v", "attn.0.pattern", "resid_post.0", "--batch-size", "2",
            "--shard-prompts", "2", "--no-progress", "--json"]
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    assert main([*argv, "--workers", "2", "--out", str(tmp_path / "two")]) == 0
    said = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [w["device"] for w in said["workers"]] == ["cpu", "cpu"]
    assert [w["items"] for w in said["workers"]] == [[0, 1], [1, 2]]
    one, two = ActivationStore.open(tmp_path / "one"), ActivationStore.open(tmp_path / "two")
    assert two.complete and len(two.manifest["shards"]) == len(one.manifest["shards"]) == 3
    assert two.manifest["identity"] == one.manifest["identity"]
    for k in (*one.sites, "prompt_index", "position", "token_id", "entropy_bits"):
        torch.testing.assert_close(one[k], two[k], rtol=1e-5, atol=1e-6, msg=k)
    assert not (tmp_path / "two" / "parts").exists()

    assert main([*argv, "--workers", "2", "--out", str(tmp_path / "two")]) == 0  # reused
    assert "holds this capture, finished; reusing it" in capsys.readouterr().err


def test_a_submitit_array_captures_what_one_process_does(text_models, tmp_path, capsys):
    """``--launcher submitit`` without Slurm: submitit's local executor runs one job per shard.
    A job that fails stops the run with one line naming its log; the rerun reuses the other
    shard's part and runs only the failed one."""
    pytest.importorskip("submitit")
    from bayesgeom.interp.store_parts import part_dir

    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n")
    argv = ["capture", "--model", str(text_models["llama"]), "--prompts", str(prompts),
            "--sites", "attn.-1.v", "resid_post.0", "--batch-size", "2", "--shard-prompts", "2",
            "--no-progress", "--json"]
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    two = tmp_path / "two"
    blocker = part_dir(two, 1, 2)  # shard 2's part folder taken by a file: its job fails
    blocker.parent.mkdir(parents=True)
    blocker.write_text("")
    array = [*argv, "--workers", "2", "--launcher", "submitit", "--out", str(two)]
    capsys.readouterr()
    assert main(array) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()
           and not line.startswith("bayesgeom: capture shard")]
    assert len(err) == 1 and "capture shard 2 of 2 failed as submitit job" in err[0], err
    assert "its log:" in err[0] and "rerun the same command" in err[0]
    blocker.unlink()
    assert main(array) == 0
    said = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [w["reused"] for w in said["workers"]] == [True, False]
    assert [w["device"] for w in said["workers"]] == ["cpu", "cpu"]
    one, got = ActivationStore.open(tmp_path / "one"), ActivationStore.open(two)
    for k in (*one.sites, "prompt_index", "position", "token_id"):
        torch.testing.assert_close(one[k], got[k], rtol=1e-5, atol=1e-6, msg=k)
