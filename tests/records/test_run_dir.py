"""records.run_dir: one writer per folder (an OS lock), one run per folder (the claim), and the
restart rules; records.checksums and the readers that name a damaged file."""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
from pathlib import Path

import pytest

from bayesgeom.records import (
    FileFault,
    InputFileError,
    Parts,
    RunBusyError,
    RunDir,
    RunDirError,
    atomic_write_text,
    check_safetensors,
    exit_code,
    fingerprint,
    hold,
    read_json,
    read_table,
    read_text,
    verify_checksums,
    write_checksums,
    write_json,
)


def _try_hold(out: str, q: mp.Queue) -> None:
    try:
        with hold(out):
            q.put("held")
    except RunBusyError as e:
        q.put(f"busy: {e}")


def test_a_second_process_cannot_hold_a_held_folder(tmp_path):
    out = tmp_path / "run"
    ctx = mp.get_context("spawn")
    with hold(out):
        q = ctx.Queue()
        p = ctx.Process(target=_try_hold, args=(str(out), q))
        p.start()
        p.join(60)
        msg = q.get(timeout=5)
        assert msg.startswith("busy:") and "is in use by process" in msg
    q = ctx.Queue()
    p = ctx.Process(target=_try_hold, args=(str(out), q))
    p.start()
    p.join(60)
    assert q.get(timeout=5) == "held"  # released when the holder leaves


def test_a_second_holder_in_the_same_process_is_refused_too(tmp_path):
    with hold(tmp_path / "run"), pytest.raises(RunBusyError) as e, hold(tmp_path / "run"):
        pass
    assert exit_code(e.value) == 1


def test_an_out_that_is_a_file_or_unwritable_is_one_line(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RunDirError, match=r"file is a file, not a directory; choose another "
                                          r"--out") as e:
        RunDir(f / "run", "geometry", {}).__enter__()
    assert exit_code(e.value) == 2 and f.read_text() == "x"

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(FileFault, match=r"read-only; choose another --out"):
        RunDir(tmp_path / "ro" / "run", "geometry", {}).__enter__()


def test_claims_refuse_foreign_folders_and_other_commands(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match=r"holds files that are not a bayesgeom run "
                                          r"\(notes.txt\)") as e:
        RunDir(notes, "geometry", {}).__enter__()
    assert exit_code(e.value) == 2 and (notes / "notes.txt").read_text() == "mine"
    assert [p.name for p in notes.iterdir()] == ["notes.txt"]  # a refusal leaves no lock
    with RunDir(tmp_path / "g", "geometry", {"k": 1}) as rd:
        rd.finish()
    with pytest.raises(RunDirError, match="holds a bayesgeom geometry run"):
        RunDir(tmp_path / "g", "steer", {"k": 1}).__enter__()


def test_same_settings_resume_other_settings_restart_or_are_refused(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError), RunDir(out, "steer", {"lr": 1}):
        (out / "half.txt").write_text("unfinished")
        raise RuntimeError("crash")
    assert read_json(out / "run.json")["status"] == "running"
    with RunDir(out, "steer", {"lr": 1}) as rd:  # the same run: resumed, files kept
        assert rd.previous is not None and rd.restarted is None
        assert (out / "half.txt").exists()
    parts = Parts(out)
    parts.put("cond", "fp", scores={"a": 1})
    with RunDir(out, "steer", {"lr": 2}) as rd:  # unfinished + other settings: restarted
        assert rd.restarted == "lr 1 -> 2" and rd.previous is None
        assert not (out / "half.txt").exists()
        assert parts.get("cond", "fp") == {"scores": {"a": 1}}  # finished parts kept
        rd.finish()
    with pytest.raises(RunDirError, match=r"finished steer run with other settings \(lr 2 -> 3"
                                          r"\); choose another --out, or pass --restart"):
        RunDir(out, "steer", {"lr": 3}).__enter__()
    assert read_json(out / "run.json")["settings"] == {"lr": 2}
    with RunDir(out, "steer", {"lr": 3}, restart=True) as rd:
        assert rd.restarted == "lr 2 -> 3"
    with RunDir(out, "steer", {"lr": 3}) as rd:
        assert rd.previous is not None and rd.previous["status"] == "running"
        rd.finish()
    with RunDir(out, "steer", {"lr": 3}, restart=True) as rd:  # the same settings, over
        assert rd.previous is None and rd.restarted == "--restart"


def test_the_run_record_is_read_whole_or_named_as_damaged(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text('{"experiment": "ge')
    with pytest.raises(FileFault, match=r"run.json is not valid JSON \(line 1\)"):
        RunDir(out, "geometry", {}).__enter__()
    (out / "run.json").write_text('{"config": {}, "task": {}}')
    with pytest.raises(RunDirError, match="older bayesgeom"):
        RunDir(out, "geometry", {}).__enter__()


@pytest.mark.parametrize("record, msg", [
    ("{}", "is damaged: it holds an empty record"),
    ('{"experiment": "geometry"}', "is damaged: it lacks fingerprint, status, settings"),
    ('{"experiment": "geometry", "fingerprint": "f", "status": "done"}',
     "is damaged: it lacks settings"),
    ('{"experiment": "geometry", "fingerprint": "f", "status": "done", "settings": 3}',
     "is damaged: its experiment or settings are not what bayesgeom writes"),
])
def test_a_damaged_run_record_is_named_as_damage_with_the_fix(tmp_path, record, msg):
    """Not "an older bayesgeom" nor "another run with other settings ... --restart"."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(record)
    with pytest.raises(FileFault, match=msg) as e:
        RunDir(out, "geometry", {"a": 1}).__enter__()
    assert f"delete {out} (or choose another --out) and run again" in str(e.value)
    assert e.value.exit_code == 1


def test_checksums_find_truncated_and_altered_files(tmp_path):
    d = tmp_path / "ck"
    d.mkdir()
    (d / "w.bin").write_bytes(b"0123456789")
    write_checksums(d)
    verify_checksums(d)
    (d / "w.bin").write_bytes(b"01234")
    with pytest.raises(FileFault, match=r"w.bin has 5 bytes, 10 were written \(truncated"):
        verify_checksums(d)
    (d / "w.bin").write_bytes(b"0123456780")
    with pytest.raises(FileFault, match="does not match its recorded checksum"):
        verify_checksums(d)
    (d / "w.bin").unlink()
    with pytest.raises(FileFault, match="is missing"):
        verify_checksums(d)


def test_a_truncated_safetensors_file_is_found_without_loading_it(tmp_path):
    import torch
    from safetensors.torch import save_file

    p = tmp_path / "m.safetensors"
    save_file({"w": torch.ones(64, 64)}, str(p))
    check_safetensors(p)
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(FileFault, match=r"bytes where its header needs .* \(truncated"):
        check_safetensors(p)
    p.write_bytes(b"not a safetensors file at all")
    with pytest.raises(FileFault, match="is not a safetensors file"):
        check_safetensors(p)


def test_readers_name_the_file_and_the_fix(tmp_path):
    j = tmp_path / "eval.json"
    j.write_text("[1, 2]")
    with pytest.raises(FileFault, match=r"eval.json holds a JSON list, expected a dict"):
        read_json(j, expect=dict)
    write_json(j, {"a": 1})
    with pytest.raises(FileFault, match=r"eval.json lacks b; it is damaged"):
        read_json(j, expect=dict, keys=("b",))
    t = tmp_path / "m.parquet"
    t.write_bytes(b"PAR1 garbage")
    with pytest.raises(FileFault, match=r"m.parquet is not a readable parquet table"):
        read_table(t)
    with pytest.raises(FileFault, match="is missing"):
        read_table(tmp_path / "none.parquet")


def test_user_text_is_utf8_without_its_bom(tmp_path):
    p = tmp_path / "prompts.txt"
    p.write_bytes("\ufeffcafé\n".encode())
    assert read_text(p) == "café\n"
    p.write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(InputFileError, match=r"is not UTF-8 text \(byte 0xe9 on line 2\)"):
        read_text(p, "prompts file")
    with pytest.raises(InputFileError, match="is a directory"):
        read_text(tmp_path)


def test_a_full_disk_is_one_line_and_leaves_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "summary.json"
    atomic_write_text(p, "old")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(FileFault, match=r"^no space left on the device holding .*summary.json"):
        atomic_write_text(p, "new")
    assert p.read_text() == "old" and [q.name for q in tmp_path.iterdir()] == ["summary.json"]


def test_fingerprints_ignore_key_order_only():
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 1.5})


def test_a_restart_keeps_nested_runs_for_their_own_claims(tmp_path):
    out = tmp_path / "demo"
    with RunDir(out, "demo", {"quick": True}) as rd:
        with RunDir(out / "geometry", "geometry", {"k": 1}) as sub:
            (out / "geometry" / "summary.json").write_text("{}")
            sub.finish()
        (out / "summary.json").write_text("{}")
        rd.finish()
    with RunDir(out, "demo", {"quick": False}, restart=True):
        assert not (out / "summary.json").exists()
        assert (out / "geometry" / "summary.json").exists()
        with RunDir(out / "geometry", "geometry", {"k": 1}) as sub:
            assert sub.done
