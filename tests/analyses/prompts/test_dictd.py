"""A damaged dict-gcide install (issue 38, cause 4): each way the dictd files can be damaged,
built here from the synthetic dictionary of ``test_gcide``, is one line naming the file and
the package (a fault, exit status 1), from the definitions reader, from the cheap check and
from the geometry config's check that runs before any model loads; before this, a truncated
``.dict.dz`` was an ``EOFError`` traceback, a bad index line a ``ValueError`` traceback, a
file that is not gzip "Not a gzipped file" without its name, and an index cut mid-line gave
fewer definitions without a word."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

from bayesgeom.analyses.geometry.config import GeometryConfig
from bayesgeom.analyses.prompts import gcide
from bayesgeom.analyses.prompts.corpora import CorpusPaths, read_corpora
from bayesgeom.records import FileFault, exit_code

from .test_gcide import write_dictd


def _index_lines(folder: Path) -> list[str]:
    return (folder / gcide.INDEX_FILE).read_text().splitlines()


def _write_index(folder: Path, lines: list[str], end: str = "\n") -> None:
    (folder / gcide.INDEX_FILE).write_text("\n".join(lines) + end)


def _truncated_data(folder: Path) -> Path:
    data = folder / gcide.DICT_FILE
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    return data


def _not_gzip(folder: Path) -> Path:
    data = folder / gcide.DICT_FILE
    data.write_bytes(b"Blorf \\Blorf\\, n. plain text where gzip belongs\n")
    return data


def _corrupt_deflate(folder: Path) -> Path:
    data = folder / gcide.DICT_FILE
    raw = bytearray(data.read_bytes())
    raw[10] = 0xFF  # the first deflate block's header: type 3 does not exist
    data.write_bytes(bytes(raw))
    return data


def _bad_checksum(folder: Path) -> Path:
    data = folder / gcide.DICT_FILE
    raw = bytearray(data.read_bytes())
    raw[-8] ^= 0x01  # the trailer's CRC-32
    data.write_bytes(bytes(raw))
    return data


def _data_after_stream(folder: Path) -> Path:
    data = folder / gcide.DICT_FILE
    data.write_bytes(data.read_bytes() + b"stray bytes")
    return data


def _bad_number(folder: Path) -> Path:
    lines = _index_lines(folder)
    word, off, _ = lines[2].split("\t")
    lines[2] = f"{word}\t{off}\tB!"
    _write_index(folder, lines)
    return folder / gcide.INDEX_FILE


def _two_fields(folder: Path) -> Path:
    lines = _index_lines(folder)
    lines[2] = lines[2].rpartition("\t")[0]
    _write_index(folder, lines)
    return folder / gcide.INDEX_FILE


def _cut_mid_line(folder: Path) -> Path:
    index = folder / gcide.INDEX_FILE
    raw = index.read_bytes()
    second_end = raw.index(b"\n", raw.index(b"\n") + 1)
    index.write_bytes(raw[: second_end + 4])  # two whole lines and 3 bytes of the third
    return index


def _span_past_data(folder: Path) -> Path:
    lines = _index_lines(folder)
    word, off, _ = lines[-1].split("\t")
    lines[-1] = f"{word}\t{off}\tBAAA"  # 262,144 bytes from there: past the data
    _write_index(folder, lines)
    return folder / gcide.INDEX_FILE


def _empty_index(folder: Path) -> Path:
    (folder / gcide.INDEX_FILE).write_bytes(b"")
    return folder / gcide.INDEX_FILE


def _binary_index(folder: Path) -> Path:
    index = folder / gcide.INDEX_FILE
    index.write_bytes(bytes(range(256)).replace(b"\t", b"").replace(b"\n", b"") + b"\n")
    return index


#: case -> (what damages a good dictionary, returning the damaged file; what the line says)
CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "truncated dict.dz": (_truncated_data, "ends before its gzip stream does"),
    "dict.dz not gzip": (_not_gzip, "is not gzip data"),
    "corrupt deflate": (_corrupt_deflate, "is corrupt gzip data (invalid block type)"),
    "bad CRC-32": (_bad_checksum, "is corrupt gzip data (incorrect data check)"),
    "data after the stream": (_data_after_stream, "holds data after the end of its gzip"),
    "bad base-64 number": (_bad_number, "line 3 ("),
    "two fields": (_two_fields, "has 2 tab-separated field(s), not 3"),
    "index cut mid-line": (_cut_mid_line, "ends in an incomplete line 3"),
    "span past the data": (_span_past_data, "which holds"),
    "empty index": (_empty_index, "is empty"),
    "binary index": (_binary_index, "has 1 tab-separated field(s), not 3"),
}


def damaged_dictd(folder: Path, case: str) -> Path:
    """A synthetic dict-gcide in ``folder`` damaged as :data:`CASES` ``case`` says; returns
    the damaged file."""
    write_dictd(folder)
    return CASES[case][0](folder)


def _assert_one_line_fault(e: FileFault, path: Path, says: str) -> None:
    msg = str(e)
    assert "\n" not in msg and says in msg, msg
    assert msg.startswith(f"{path} "), msg
    assert "Debian package dict-gcide looks damaged" in msg, msg
    assert msg.endswith("(apt-get install --reinstall dict-gcide)"), msg
    assert exit_code(e) == 1


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_dictionary_is_one_line_naming_the_file(case: str, tmp_path: Path) -> None:
    path = damaged_dictd(tmp_path / "dictd", case)
    says = CASES[case][1]
    with pytest.raises(FileFault) as reading:
        gcide.definitions_by_subject(tmp_path / "dictd")
    _assert_one_line_fault(reading.value, path, says)
    with pytest.raises(FileFault) as checking:
        gcide.check_dictionary(tmp_path / "dictd")
    assert str(checking.value) == str(reading.value)


def test_the_lines_name_what_is_wrong(tmp_path: Path) -> None:
    damaged_dictd(tmp_path / "a", "bad base-64 number")
    with pytest.raises(FileFault, match=r"line 3 \('Blorph\\t[A-Za-z0-9+/]+\\tB!'\) has an "
                                        r"offset or length that is not a base-64 number "
                                        r"\('!' is not a base-64 digit\)"):
        gcide.check_dictionary(tmp_path / "a")
    damaged_dictd(tmp_path / "b", "span past the data")
    size = len(gzip.decompress((tmp_path / "b" / gcide.DICT_FILE).read_bytes()))
    with pytest.raises(FileFault, match=rf"line 6 \('Zapp'\) points at bytes \d+-\d+ of "
                                        rf"{tmp_path / 'b' / gcide.DICT_FILE}, which holds "
                                        rf"{size} uncompressed bytes"):
        gcide.check_dictionary(tmp_path / "b")


def test_an_unreadable_file_names_the_package(tmp_path: Path) -> None:
    folder = write_dictd(tmp_path / "dictd")
    (folder / gcide.INDEX_FILE).unlink()
    (folder / gcide.INDEX_FILE).mkdir()  # readable by no one, root included
    with pytest.raises(FileFault, match=r"gcide.index is a directory; expected a file \(a "
                                        r"file of Debian package dict-gcide\)$"):
        gcide.definitions_by_subject(folder)


def test_a_whole_dictionary_passes_the_check(tmp_path: Path) -> None:
    """A whole dictionary passes, a headword that is not UTF-8 included (it is only shown)."""
    folder = write_dictd(tmp_path / "dictd")
    gcide.check_dictionary(folder)
    assert sum(map(len, gcide.definitions_by_subject(folder).values())) == 6
    index = folder / gcide.INDEX_FILE
    index.write_bytes(index.read_bytes().replace(b"Blorph", b"Blor\xffph"))
    gcide.check_dictionary(folder)


@pytest.mark.parametrize("case", ["truncated dict.dz", "index cut mid-line"])
def test_the_geometry_check_and_the_corpora_refuse_a_damaged_dictionary(
        case: str, tmp_path: Path) -> None:
    """The config check (before any model loads) says it; the corpus reader raises it rather
    than skip the set as not installed."""
    path = damaged_dictd(tmp_path / "dictd", case)
    paths = CorpusPaths(dictd=tmp_path / "dictd")
    cfg = GeometryConfig(prompts=("mixed", "gcide-medical"), corpus_paths=paths,
                         out=tmp_path / "out")
    with pytest.raises(FileFault) as checked:
        cfg.check()
    _assert_one_line_fault(checked.value, path, CASES[case][1])
    GeometryConfig(prompts=("mixed",), corpus_paths=paths, out=tmp_path / "out").check()
    with pytest.raises(FileFault):
        read_corpora(("gcide-legal",), paths)
