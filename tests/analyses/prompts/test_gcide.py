"""GCIDE definitions by subject (Debian dict-gcide): the dictd parser against a tiny synthetic
dictionary written here (the real format, made-up text), the definition domains in the pool
(never part of ``mixed``), the one-line install hint before any model loads, and the real
dictionary where Debian's package is installed (skipped otherwise)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from bayesgeom.analyses.geometry.config import GeometryConfig
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.prompts import dictd, gcide
from bayesgeom.analyses.prompts.corpora import (
    DEFINITION_DOMAINS,
    CorpusPaths,
    CorpusReport,
    Document,
    read_corpora,
)
from bayesgeom.analyses.prompts.pool import PoolConfig, build_pool, definition_share

# made-up entries in GCIDE's dictd layout (3-space senses, deeper quotations, source tags)
ARTICLES = {
    "Blorf": (
        'Blorf \\Blorf\\, n. [L. blorfus (a made-up\n'
        '   etymol.).] (Med.)\n'
        '   1. A swelling of the left elbow that follows long\n'
        '      hours of typing.\n'
        '      [1913 Webster]\n\n'
        '   2. (Zool.) A small beetle of the marshes.\n'
        '      [1913 Webster]\n\n'
        '            The blorf hummed all night.          --Nobody.\n'
        '      [1913 Webster]\n\n'
        '   Note: Notes are not definitions.\n'
        '         [1913 Webster]\n\n'
        '   {Blorf fever} (Med.), a fever that comes with a bad\n'
        '      blorf of the elbow. --Someone.\n'
        '      [1913 Webster]\n'),
    "Quint": (
        'Quint \\Quint\\, n. [See {Quintal}.]\n'
        '   (Scot. Law)\n'
        '   A writ asking a court to look again at a matter of\n'
        '   land [Obs.].\n'
        '   [1913 Webster]\n'),
    "Zapp": (
        'Zapp \\Zapp\\, n. (Geom.)\n'
        '   (a) A line that meets a circle in exactly three points.\n'
        '   (b) (Med.) A bruise shaped like a triangle.\n'
        '       [1913 Webster]\n\n'
        '   {Zapp ratio} (Math. & Law), a made-up ambiguous sense.\n'
        '      [1913 Webster]\n\n'
        '   {Zapp bug} (Computers), a fault in a program that makes\n'
        '      it stop at random [ae]ons.\n'
        '      [PJC]\n'),
    "Snee": (
        'Snee \\Snee\\, a. (Med.)\n'
        '   See {Blorf}.\n'
        '   [1913 Webster]\n'),
}


def write_dictd(folder: Path) -> Path:
    """A dictd dictionary of :data:`ARTICLES` (``gcide.index`` + gzip ``gcide.dict.dz``),
    with a ``00-database-*`` record and a variant spelling sharing an article."""
    folder.mkdir(parents=True, exist_ok=True)
    blob, index = b"", []
    for word, text in [("00-database-short", "A made-up test dictionary\n"), *ARTICLES.items()]:
        raw = text.encode()
        index.append((word, len(blob), len(raw)))
        blob += raw
    off, n = next((o, k) for w, o, k in index if w == "Blorf")
    index.append(("Blorph", off, n))

    def b64(x: int) -> str:
        digits = ""
        while True:
            digits = dictd.B64[x % 64] + digits
            x //= 64
            if x == 0:
                return digits

    lines = [f"{w}\t{b64(o)}\t{b64(k)}" for w, o, k in sorted(index)]
    (folder / gcide.INDEX_FILE).write_text("\n".join(lines) + "\n")
    (folder / gcide.DICT_FILE).write_bytes(gzip.compress(blob))
    return folder


def test_dictd_base64_numbers():
    assert [dictd.b64_number(s) for s in ("A", "B", "BA", "+8", "Bchrk")] == \
        [0, 1, 64, 62 * 64 + 60, ((1 * 64 + 28) * 64 + 33) * 64 ** 2 + 43 * 64 + 36]


def test_definitions_by_subject_from_a_synthetic_dictionary(tmp_path):
    defs = gcide.definitions_by_subject(write_dictd(tmp_path / "dictd"))
    got = {s: [(d.headword, d.labels, d.text) for d in v] for s, v in defs.items()}
    assert got["medical"] == [
        ("Blorf", ("Med.",), "A swelling of the left elbow that follows long hours of typing."),
        ("Blorf fever", ("Med.",), "a fever that comes with a bad blorf of the elbow."),
        ("Zapp", ("Med.",), "A bruise shaped like a triangle."),
    ]  # sense 2 is zoology; the quotation, the note and the cross-reference are left out
    assert got["legal"] == [("Quint", ("Scot. Law",),
                             "A writ asking a court to look again at a matter of land.")]
    assert got["math"] == [("Zapp", ("Geom.",),
                            "A line that meets a circle in exactly three points.")]
    assert got["computing"] == [("Zapp bug", ("Computers",),
                                 "a fault in a program that makes it stop at random æons.")]
    assert defs["legal"][0].prompt.startswith("Quint: A writ")


def test_definition_domains_read_pool_and_stay_out_of_mixed(tmp_path):
    paths = CorpusPaths(dictd=write_dictd(tmp_path / "dictd"))
    rep = read_corpora(DEFINITION_DOMAINS, paths)
    assert not rep.unavailable and rep.domains() == list(DEFINITION_DOMAINS)
    (doc,) = rep.documents[("gcide-legal", "gcide")]
    assert doc.text.startswith("Quint: ") and doc.domain == "gcide-legal"
    core = CorpusReport({("code", "t"): [Document("code", "t", f"f{i}", f"x = {i} + {i} * 2",
                                                  "code") for i in range(40)]}, {})
    both = CorpusReport({**core.documents, **rep.documents}, {})
    spec = PoolConfig(size=20, windows=gcide_windows())
    plain = build_pool(spec, report=core)
    mixed = build_pool(PoolConfig(20, 0, ("code", *DEFINITION_DOMAINS), spec.windows),
                       report=both)
    pd.testing.assert_frame_equal(mixed.select("mixed").reset_index(drop=True),
                                  plain.table.reset_index(drop=True))
    assert definition_share(20) == 4
    med = mixed.select("gcide-medical")
    assert len(med) == 3 and set(med["source"]) == {"gcide"}  # fewer than the share of 4


def gcide_windows():
    from bayesgeom.analyses.prompts.segmentation import WindowSpec

    return WindowSpec(min_words=3, clause_cut=0.0)


def test_a_missing_dictionary_is_one_line_before_any_model_loads(tmp_path):
    paths = CorpusPaths(dictd=tmp_path / "none")
    rep = read_corpora(("gcide-medical",), paths)
    (msg,) = rep.unavailable.values()
    assert "apt-get install dict-gcide" in msg and "\n" not in msg
    cfg = GeometryConfig(prompts=("mixed", "gcide-medical"), corpus_paths=paths,
                         out=tmp_path / "out")
    with pytest.raises(ExperimentError, match=r"gcide-medical: .*apt-get install dict-gcide"):
        cfg.check()  # the config check, which runs before open_model
    GeometryConfig(prompts=("mixed",), corpus_paths=paths, out=tmp_path / "out").check()


REAL = Path("/usr/share/dictd")


@pytest.mark.skipif(not (REAL / gcide.INDEX_FILE).is_file(),
                    reason="Debian's dict-gcide is not installed (apt-get install dict-gcide)")
def test_the_installed_dictionary():
    gcide.check_dictionary(REAL)  # whole: every index line parses and points into the data
    defs = gcide.definitions_by_subject(REAL)
    n = {s: len(v) for s, v in defs.items()}
    # dict-gcide 0.48.5: 5,459 / 2,411 / 1,003 / 144 (docs/geometry.md)
    assert n["medical"] > 5000 and n["legal"] > 2000 and n["math"] > 900
    assert n["computing"] > 100
    words = {s: {d.headword for d in v} for s, v in defs.items()}
    assert "Appendicitis" in words["medical"] and "Habeas corpus" in words["legal"]
    assert "Hypotenuse" in words["math"] and "Compiler" in words["computing"]
    for v in defs.values():
        assert all(d.text and "\\" not in d.text and "[" not in d.text for d in v)


def test_mixed_draws_and_scores_only_the_mixed_pools_domains():
    from bayesgeom.analyses.geometry.pool import needed_rows, sample_set

    pool = pd.DataFrame({"prompt_id": range(40), "domain": ["code"] * 20 + ["gcide-math"] * 20,
                         "entropy_bits": [float(i % 20) for i in range(40)],
                         "n_tokens": 5})
    assert needed_rows(pool, ["mixed"]).tolist() == [True] * 20 + [False] * 20
    assert needed_rows(pool, ["gcide-math"]).tolist() == [False] * 20 + [True] * 20
    assert needed_rows(pool, ["mixed", "gcide-math"]).all()
    assert set(sample_set(pool, "mixed", 2, 5, 0)["domain"]) == {"code"}
    assert set(sample_set(pool, "gcide-math", 2, 5, 0)["domain"]) == {"gcide-math"}
