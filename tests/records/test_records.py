"""records: atomic writes, strict JSON, typed results round-trip, declared options, and the
finished-part protocol (fingerprints, checksums)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesgeom.records import (
    OptionError,
    Parts,
    atomic_write,
    check_options,
    fingerprint,
    from_json,
    option,
    read_json,
    same_option,
    to_json,
    write_json,
)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")

    def boom(p: Path) -> None:
        p.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["a.txt"]


def test_json_files_are_strict_json(tmp_path):
    write_json(tmp_path / "s.json", {"x": math.nan, "y": np.float32(0.5), "a": np.arange(2),
                                     "p": tmp_path, 3: (1, 2)})
    text = (tmp_path / "s.json").read_text()
    assert "NaN" not in text
    assert json.loads(text) == {"x": None, "y": 0.5, "a": [0, 1], "p": str(tmp_path),
                                "3": [1, 2]}


@dataclass(frozen=True)
class Inner:
    mae: float
    ks: tuple[int, ...]


@dataclass
class Outer:
    name: str
    head: Inner = field(metadata={"flatten": True})
    per: dict[str, Inner] = field(default_factory=dict)
    maybe: float | None = None
    hidden: list[int] = field(default_factory=list, metadata={"serialise": False})


def test_typed_results_round_trip_with_nan_and_flattening():
    r = Outer("m", Inner(math.nan, (0, 2)), {"a": Inner(0.25, (1,))}, None, [1, 2])
    data = to_json(r)
    assert data == {"name": "m", "mae": None, "ks": [0, 2], "per": {"a": {"mae": 0.25,
                                                                          "ks": [1]}},
                    "maybe": None}
    back = from_json(Outer, json.loads(json.dumps(data)))
    assert math.isnan(back.head.mae) and back.head.ks == (0, 2)
    assert back.per["a"] == Inner(0.25, (1,)) and back.maybe is None and back.hidden == []


@dataclass
class Cfg:
    n: int = option(5, "count", min=1)
    frac: float = option(0.5, "fraction", min=0.0, max=1.0)
    kind: str = option("a", "kind", choices=("a", "b"))
    cuts: tuple[float, ...] = option((0.5,), "cuts", min=0.0)


@dataclass
class Other:
    n: int = same_option(Cfg, "n", 9)


@pytest.mark.parametrize("kw, msg", [({"n": 0}, "n must be >= 1"),
                                     ({"frac": 1.5}, "frac must be <= 1"),
                                     ({"frac": math.nan}, "frac must be finite"),
                                     ({"kind": "c"}, "kind must be one of a, b"),
                                     ({"cuts": (0.5, -1.0)}, "cuts must be >= 0"),
                                     ({"cuts": 0.5}, r"cuts must be a list of values \(such as "
                                                     r"\[0.5\]\), got 0.5"),
                                     ({"cuts": "0.5"}, "cuts must be a list of values")])
def test_declared_options_are_checked(kw, msg):
    with pytest.raises(OptionError, match=msg):
        check_options(Cfg(**kw))
    check_options(Cfg())


def test_an_option_is_declared_once_and_shared():
    assert Other().n == 9
    with pytest.raises(OptionError, match="n must be >= 1"):
        check_options(Other(n=0))


def test_parts_are_reused_only_with_the_same_fingerprint_and_intact_files(tmp_path):
    parts = Parts(tmp_path)
    fp = fingerprint({"seed": 0}, "weights")
    assert fingerprint({"seed": 0}, "weights") == fp != fingerprint({"seed": 1}, "weights")
    df = pd.DataFrame({"x": [1.0, 2.0]})
    parts.put("cut", fp, table=df, acts=np.eye(2), meta={"k": 1})
    got = parts.get("cut", fp)
    pd.testing.assert_frame_equal(got["table"], df)
    assert np.array_equal(got["acts"], np.eye(2)) and got["meta"] == {"k": 1}
    assert parts.get("cut", fingerprint({"seed": 1}, "weights")) is None
    npy = tmp_path / "cut.acts.npy"
    npy.write_bytes(npy.read_bytes()[:-8] + b"\0" * 8)  # same size, altered values
    assert parts.get("cut", fp) is None
    (tmp_path / "run.json").write_text("{}")
    parts.mark("run", fp, ["run.json"])
    assert parts.get("run", fp) == {"run.json": {}}
    assert read_json(tmp_path / "run.done.json")["fingerprint"] == fp
