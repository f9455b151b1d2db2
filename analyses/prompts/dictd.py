"""A dictd dictionary's two files, read strictly: the ``.index`` (one ``headword TAB offset TAB
length`` line per headword, the numbers in dictd's base 64 counting bytes of the uncompressed
data) and the gzip ``.dict.dz`` (dictzip's random-access table sits in the gzip header's extra
field, which :mod:`zlib` skips).

A damaged install must not pass for a smaller dictionary, nor end in a traceback: every failure
to read or parse either file is a :class:`~records.FileFault` (exit status 1) of one line that
names the file, what is wrong with it and the Debian package to reinstall. Refused:

* an index that is empty, whose last line has no newline (a file cut short: the lines after
  the cut are lost, and with them their definitions), or with a line that is not three
  tab-separated fields or whose offset or length is not a base-64 number;
* a ``.dict.dz`` that is not gzip, whose deflate stream or CRC-32 is corrupt, that ends before
  its gzip stream does (truncated) or that holds data after it;
* an index entry whose span (offset + length, in uncompressed bytes) runs past the data.

The span check needs the data's uncompressed size. The gzip trailer's ISIZE holds it (mod
2^32), but in a truncated file those 4 bytes are whatever the cut left there, so the size is
counted instead by inflating the whole stream in 1 MiB chunks without keeping the text
(:func:`data_size`; about 0.3 s and 1 MiB of memory for GCIDE's 40 MB). An index cut exactly
at a line boundary is well-formed and cannot be told from a shorter dictionary: it is not
caught.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from ...records import FileFault, os_error_line

#: dictd's base-64 digits, of values 0-63
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {ch: i for i, ch in enumerate(B64)}
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20  # bytes read per step when inflating

#: (headword, offset, length) of one index line; offset and length in uncompressed bytes
Entry = tuple[str, int, int]


def damaged(path: Path, what: str, package: str) -> FileFault:
    """The one-line fault for a damaged file of Debian package ``package``."""
    return FileFault(f"{path} {what}: Debian package {package} looks damaged; reinstall it "
                     f"(apt-get install --reinstall {package})")


def _unreadable(e: OSError, path: Path, package: str) -> FileFault:
    """An OS error reading ``path`` as one line that also names the package."""
    return FileFault(f"{os_error_line(e, path, writing=False)} (a file of Debian package "
                     f"{package})")


def b64_number(digits: str) -> int:
    """A dictd base-64 number (``"Bchrk"`` -> its byte offset); ``ValueError`` when
    ``digits`` is empty or holds a character that is not a base-64 digit."""
    if not digits:
        raise ValueError("an empty number")
    n = 0
    for ch in digits:
        value = _B64_VALUE.get(ch)
        if value is None:
            raise ValueError(f"{ch!r} is not a base-64 digit")
        n = n * 64 + value
    return n


def _shown(line: str) -> str:
    """A line as a message quotes it: escaped, at most 60 characters."""
    text = repr(line)
    return text if len(text) <= 60 else text[:57] + "..."


def read_index(path: Path, package: str) -> list[Entry]:
    """(headword, byte offset, byte length) of every line of a dictd ``.index``, in file
    order (line ``i + 1`` is entry ``i``); a damaged index is a :class:`FileFault`. Headwords
    are decoded as UTF-8, a byte that is not UTF-8 replaced."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise _unreadable(e, path, package) from e
    if not raw:
        raise damaged(path, "is empty", package)
    lines = raw.decode("utf-8", errors="replace").split("\n")
    if lines[-1]:
        raise damaged(path, f"ends in an incomplete line {len(lines)} ({_shown(lines[-1])}, "
                      "no newline: the file is cut short)", package)
    out = []
    for i, line in enumerate(lines[:-1], start=1):
        parts = line.split("\t")
        if len(parts) != 3:
            raise damaged(path, f"line {i} ({_shown(line)}) has {len(parts)} tab-separated "
                          "field(s), not 3 (headword, offset, length)", package)
        try:
            out.append((parts[0], b64_number(parts[1]), b64_number(parts[2])))
        except ValueError as e:
            raise damaged(path, f"line {i} ({_shown(line)}) has an offset or length that is "
                          f"not a base-64 number ({e})", package) from e
    return out


def _inflate(path: Path, package: str, keep: bool) -> tuple[int, bytes]:
    """(uncompressed size in bytes, the data if ``keep`` else ``b""``) of a gzip file of one
    member, read in :data:`_CHUNK` steps; a damaged file is a :class:`FileFault`."""
    size, kept = 0, []
    z = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip header and trailer, CRC checked
    try:
        with path.open("rb") as f:
            head = f.read(_CHUNK)
            if head[:2] != _GZIP_MAGIC:
                raise damaged(path, "is not gzip data", package)
            chunk = head
            while chunk and not z.eof:
                out = z.decompress(chunk)
                size += len(out)
                if keep:
                    kept.append(out)
                chunk = f.read(_CHUNK) if not z.eof else b""
            after = z.unused_data or f.read(1)
    except OSError as e:
        if isinstance(e, FileFault):
            raise
        raise _unreadable(e, path, package) from e
    except zlib.error as e:
        reason = str(e).rpartition(": ")[2]
        raise damaged(path, f"is corrupt gzip data ({reason})", package) from e
    if not z.eof:
        raise damaged(path, f"ends before its gzip stream does, after {size} uncompressed "
                      "bytes (the file is cut short)", package)
    if after:
        raise damaged(path, "holds data after the end of its gzip stream", package)
    return size, b"".join(kept)


def data_size(path: Path, package: str) -> int:
    """The uncompressed size in bytes of a ``.dict.dz``, counted by inflating it whole (the
    text is not kept); a damaged file is a :class:`FileFault`."""
    return _inflate(path, package, keep=False)[0]


def read_data(path: Path, package: str) -> bytes:
    """The uncompressed bytes of a ``.dict.dz``; a damaged file is a :class:`FileFault`."""
    return _inflate(path, package, keep=True)[1]


def check_spans(entries: list[Entry], size: int, index: Path, data: Path,
                package: str) -> None:
    """Every entry's span ``[offset, offset + length)`` lies within the ``size`` uncompressed
    bytes of ``data``, else a :class:`FileFault` naming the first line that runs past."""
    for i, (word, off, n) in enumerate(entries, start=1):
        if off + n > size:
            raise damaged(index, f"line {i} ({word!r}) points at bytes {off}-{off + n} of "
                          f"{data}, which holds {size} uncompressed bytes", package)


def check(index: Path, data: Path, package: str) -> None:
    """The whole dictionary is readable: the index parses, the data inflates and every span
    lies within it (a :class:`FileFault` otherwise); nothing is kept."""
    entries = read_index(index, package)
    check_spans(entries, data_size(data, package), index, data, package)
