"""The embedded model's cache: checksums recorded when written, verified on every load; a damaged,
altered or unverifiable cache is reported as such and rebuilt (one stderr line), never reused; an
unwritable cache folder is one line naming it and the fix. The 20-60 s GGUF conversion is
replaced by writing a tiny GPT-2 under a monkeypatched BAYESGEOM_CACHE."""

from __future__ import annotations

import errno

import pytest
import torch
import transformers
from safetensors import SafetensorError

from bayesgeom import interp
from bayesgeom.interp import embedded_model as em
from bayesgeom.records import FileFault, write_checksums, write_json


def _write_tiny(src, final) -> None:
    """Stands in for the GGUF conversion: a tiny model, marker and checksums, moved into
    place the way _convert does."""
    tmp = final.parent / ".tmp-test"
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=20, n_positions=16,
                                  bos_token_id=0, eos_token_id=0)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp)
    write_json(tmp / em.MARKER, {"package": em.PACKAGE, "package_version": "test",
                                 "gguf_sha256": "0" * 64})
    write_checksums(tmp)
    if final.exists():
        final.rename(final.parent / ".old-test")
    tmp.rename(final)
    import shutil

    shutil.rmtree(final.parent / ".old-test", ignore_errors=True)


def _said(capsys) -> list[str]:
    """bayesgeom's own stderr lines (transformers draws progress bars there too)."""
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("bayesgeom:")]


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A fresh BAYESGEOM_CACHE whose conversions are the tiny stand-in (counted)."""
    monkeypatch.setenv("BAYESGEOM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(em, "check_installed", lambda model: tmp_path)
    monkeypatch.setattr(em, "gguf_path", lambda model=None, work=None: tmp_path / "fake.gguf")
    calls = []
    monkeypatch.setattr(em, "_convert", lambda src, final, model: (calls.append(final),
                                                                   _write_tiny(src, final)))
    return calls


def test_a_new_cache_is_converted_once_then_verified_and_reused(cache, capsys):
    assert em.cache_info()["state"] == "not converted" and not em.cache_info()["cached"]
    d = em.ensure_cached()
    assert len(cache) == 1 and (d / "checksums.json").is_file()
    assert "converting the embedded" in _said(capsys)[0]
    info = em.cache_info()
    assert (info["state"], info["cached"], info["reason"]) == ("cached", True, None)
    m = interp.load()  # the stand-in loads through the embedded path
    assert m.info.source == "embedded" and m.logits([[1, 2]]).shape == (1, 20)
    assert len(cache) == 1 and _said(capsys) == []


@pytest.mark.parametrize("damage", ["altered", "truncated", "no checksums", "no marker"])
def test_a_damaged_cache_is_reported_and_rebuilt(cache, capsys, damage):
    d = em.ensure_cached()
    w = d / "model.safetensors"
    raw = bytearray(w.read_bytes())
    if damage == "altered":  # same size, one weight byte flipped: only the hash sees it
        raw[-5] ^= 0xFF
        w.write_bytes(bytes(raw))
    elif damage == "truncated":
        w.write_bytes(bytes(raw[:-7]))
    elif damage == "no checksums":  # converted by an older bayesgeom
        (d / "checksums.json").unlink()
    else:
        (d / em.MARKER).unlink()
    capsys.readouterr()
    info = em.cache_info()
    assert (info["state"], info["cached"]) == ("damaged", False)
    expect = {"altered": "does not match its recorded checksum", "truncated": "truncated",
              "no checksums": "records no checksums", "no marker": "lacks its completion marker"}
    assert expect[damage] in info["reason"] and "\n" not in info["reason"]
    assert not em.is_cached()
    interp.load()
    (said,) = _said(capsys)
    assert "cannot be reused" in said and expect[damage] in said
    assert len(cache) == 2 and em.cache_info()["state"] == "cached"


def test_an_unwritable_cache_folder_is_one_line_with_the_fix(cache, monkeypatch, tmp_path):
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("BAYESGEOM_CACHE", str(tmp_path / "a-file" / "cache"))
    with pytest.raises(FileFault) as e:
        em.ensure_cached()
    assert str(e.value) == (f"{tmp_path / 'a-file'} is a file, not a directory; set "
                            "BAYESGEOM_CACHE to a writable folder")
    where = tmp_path / "cache" / "models"
    with pytest.raises(FileFault) as e, em.cache_writes(where):
        raise OSError(errno.EROFS, "Read-only file system")
    assert str(e.value) == (f"cannot write {where}: the file system is read-only; set "
                            "BAYESGEOM_CACHE to a writable folder")
    with pytest.raises(FileFault) as e, em.cache_writes(where):  # how save_pretrained says it
        raise SafetensorError("Error while serializing: I/O error: No space left on device "
                              "(os error 28)")
    assert str(e.value).startswith(f"no space left on the device holding {where}")
    assert "BAYESGEOM_CACHE" in str(e.value)
