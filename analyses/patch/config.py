"""The options of ``bayesgeom patch``: :class:`PatchConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly (a pairs file is tokenised before the model
loads only where the tokenizer is already on this machine: :mod:`.pairs_file`), so a bad option,
site, head, pair file or ``--out`` is refused at once, with nothing loaded
(``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...interp.errors import InterpError
from ...interp.layer_count import known_shape
from ...interp.patch_cells import PATCH_KINDS, ModelShape, cell_grid
from ...records import option
from ...records.budget import DRAWS, SEQUENCES, TOKENS
from ...windtunnel.patch_kinds import PAIR_KS
from ...windtunnel.run_identity import known_reads
from ..kit.model_facts import TEXT, WIND_TUNNEL, model_kind
from ..kit.options import comma_words, layers_option, word_pair
from ..kit.run_options import Batched, LoadOptions, ModelOptions, RunOptions, Seeded, TwinSeeded
from .pairs_file import check_token_lengths, read_pairs_file

#: the patching directions (:func:`interp.patch_roles`)
DIRECTIONS = ("denoising", "noising")
#: the grid's site kinds by default
DEFAULT_SITES = ("resid_pre", "attn.z", "attn_out", "mlp_out")
#: how a wind tunnel's positions are chosen (module doc of :mod:`.pairs`)
POSITIONS = ("reads", "all", "last")
#: pairs of each kind by default: a wind tunnel's, and SULA's (a multiple of its example counts)
N_PAIRS, SULA_N_PAIRS = 32, 30
#: sizes of a ``--quick`` run
QUICK = {"n_pairs": 8, "n_reads": 2, "n_resamples": 200, "n_splits": 4}


def head_list(text: str) -> tuple[int, ...] | None:
    """``"all"`` -> None; ``"0,3"`` -> (0, 3).

    Example:
        >>> head_list("all"), head_list("0,3")
        (None, (0, 3))
    """
    if text.strip() == "all":
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--heads takes 'all' or comma-separated head "
                                         f"indices such as 0,3, not {text!r}") from None


@dataclass
class PatchConfig(LoadOptions, ModelOptions, Batched, Seeded, TwinSeeded, RunOptions,
                  experiment="patch", batch_size=16):
    """One patching run (the CLI derives its options from this): ``model`` a wind-tunnel run
    (its own task's pairs), a text model (SULA pairs) or, with ``pairs``, any text model on
    free prompt pairs."""

    n_pairs: int | None = option(None, f"clean/corrupt pairs of each kind (default {N_PAIRS}; "
                                 f"SULA: a multiple of its {len(PAIR_KS)} example counts, "
                                 f"default {SULA_N_PAIRS})", min=2, cost=SEQUENCES)
    sites: tuple[str, ...] | None = option(None, "site kinds of the grid, e.g. "
                                           "resid_pre,attn.z (per-head kinds: one cell per "
                                           f"head; default {','.join(DEFAULT_SITES)}, without "
                                           "the attention kinds for a model without attention)",
                                           parse=comma_words)
    layers: tuple[int, ...] | None = layers_option("patched layers")
    heads: tuple[int, ...] | None = option(None, "heads of the per-head kinds: all (default) "
                                           "or e.g. 0,3", parse=head_list)
    head_positions: bool = option(False, "also one cell per head and position (else each head "
                                  "over every position at once)")
    directions: tuple[str, ...] = option(DIRECTIONS, "denoising (clean activation into the "
                                         "corrupt run), noising (the reverse), or both",
                                         parse=comma_words)
    positions: str = option("reads", "a wind tunnel's patched positions: the edit and every "
                            "scored read after it (reads), every position from the edit on "
                            "(all), or the last scored read (last)", choices=POSITIONS,
                            needs=WIND_TUNNEL)
    edit_at: int = option(3, "a wind tunnel's pairs: the first read (0-based among the task's "
                          "reads) the evidence edit can change; pairs are kept whose edit "
                          "lies just before it, so that positions align", min=0,
                          needs=WIND_TUNNEL)
    n_reads: int = option(4, "a wind tunnel's reads scored from there on (the sequences are "
                          "cut after the last: a causal model's later tokens cannot matter)",
                          min=1, needs=WIND_TUNNEL, cost=TOKENS)
    tail: int = option(2, "a text model's patched positions: the last TAIL tokens of each "
                       "prompt", min=1, needs=TEXT, cost=TOKENS)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip (default: the "
                                            "first single-token candidates)", parse=word_pair,
                                            needs=TEXT)
    pairs: Path | None = option(None, "JSON lines of {clean, corrupt, answer, foil}: free prompt "
                                "pairs of equal token length, scored by logit[answer] - "
                                "logit[foil] (any text model; no exact posterior)", needs=TEXT)
    attribution: bool = option(True, "attribution patching on the same grid, ranked against "
                               "exact patching", negate="--no-attribution")
    n_resamples: int = option(1000, "bootstrap resamples of the pairs per interval", min=10,
                              cost=DRAWS)
    n_splits: int = option(20, "random half splits of the pairs for the held-out (cross-fit) "
                           "choice of the best cell", min=1, cost=DRAWS)
    quick: bool = option(False, "a smoke run (8 pairs, 2 reads, 200 resamples): says first "
                         "that it is not a result")

    def check(self) -> None:
        super().check()
        sites = self.sites if self.sites is not None else DEFAULT_SITES
        bad = [s for s in sites if s not in PATCH_KINDS]
        if not sites or bad or len(set(sites)) != len(sites):
            raise self.error(f"--sites {','.join(sites) or '(none)'}: give distinct site "
                             f"kinds among {', '.join(PATCH_KINDS)}"
                             + (f" ({bad[0]!r} is not one)" if bad else ""))
        if not self.directions or any(d not in DIRECTIONS for d in self.directions) \
                or len(set(self.directions)) != len(self.directions):
            raise self.error(f"--directions {','.join(self.directions) or '(none)'}: give "
                             "denoising, noising or denoising,noising")
        if self.heads is not None and (not self.heads or min(self.heads) < 0):
            raise self.error(f"--heads {self.heads}: give non-negative head indices or all")
        kind = model_kind(self.model)
        self._check_grid(kind)
        if kind == WIND_TUNNEL:
            self._check_reads()
        elif self.pairs is not None:
            self._check_pairs_file()
        elif self.sized().n_pairs % len(PAIR_KS):
            raise self.error(f"--n-pairs {self.sized().n_pairs}: SULA pairs come in equal numbers "
                             f"for each of its {len(PAIR_KS)} example counts {PAIR_KS}; give a "
                             f"multiple of {len(PAIR_KS)}")

    def _check_grid(self, kind: str) -> None:
        """Sites, heads and layers against the model's shape where it is known without torch
        (a text model's config or catalogue entry; a wind tunnel's saved config)."""
        known = tunnel_shape(self.model) if kind == WIND_TUNNEL else known_shape(self.model)
        if known is None:
            return
        name, shape = known
        sites = site_kinds(self.sites, shape)
        heads: bool | tuple[int, ...] = self.heads if self.heads is not None \
            else shape.n_heads is not None
        try:
            cell_grid(shape, list(sites), heads=heads, layers=self.layers)
        except InterpError as e:
            raise self.error(f"{name}: {e}") from None

    def _check_reads(self) -> None:
        """``edit_at`` + ``n_reads`` within the task's reads, where the run's record says how
        many there are."""
        q = known_reads(self.model)
        if q is not None and self.edit_at + self.sized().n_reads > q:
            raise self.error(f"--edit-at {self.edit_at} with --n-reads {self.sized().n_reads} "
                             f"needs {self.edit_at + self.sized().n_reads} reads; this task has "
                             f"{q} (reads 0..{q - 1}): lower one of them")

    def _check_pairs_file(self) -> None:
        try:
            rows = read_pairs_file(self.pairs)  # type: ignore[arg-type]
        except ValueError as e:
            raise self.error(str(e)) from None
        if len(rows) < 2:
            raise self.error(f"--pairs {self.pairs}: {len(rows)} pair; the intervals and the "
                             "unrelated-source control need at least 2")
        problem = check_token_lengths(self.model, rows)
        if problem is not None:
            raise self.error(f"--pairs {self.pairs}: {problem}")

    def sized(self) -> PatchConfig:
        """The configuration that runs: ``n_pairs`` None becomes :data:`N_PAIRS`
        (:data:`SULA_N_PAIRS` for SULA pairs); ``quick`` shrinks the pairs, reads and
        resamples."""
        sula = model_kind(self.model) == TEXT and self.pairs is None
        n_pairs = self.n_pairs if self.n_pairs is not None else SULA_N_PAIRS if sula else N_PAIRS
        if not self.quick:
            return replace(self, n_pairs=n_pairs)
        n = len(PAIR_KS) * 2 if sula else QUICK["n_pairs"]
        return replace(self, n_pairs=min(n_pairs, n),
                       n_reads=min(self.n_reads, QUICK["n_reads"]),
                       n_resamples=min(self.n_resamples, QUICK["n_resamples"]),
                       n_splits=min(self.n_splits, QUICK["n_splits"]))


def site_kinds(sites: tuple[str, ...] | None, shape: ModelShape) -> tuple[str, ...]:
    """The grid's site kinds: ``sites`` as given, else :data:`DEFAULT_SITES` without the
    attention kinds where ``shape`` has no attention heads (an LSTM, Mamba).

    Example:
        >>> site_kinds(None, ModelShape(2, 0, 0)), site_kinds(("attn.z",), ModelShape(2, 4))
        (('resid_pre', 'mlp_out'), ('attn.z',))
    """
    if sites is not None:
        return tuple(sites)
    if shape.n_heads == 0:
        return tuple(s for s in DEFAULT_SITES if not s.startswith("attn"))
    return DEFAULT_SITES


# ---------------------------------------------------------------- a wind tunnel, torch-free
def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def tunnel_shape(spec: object) -> tuple[str, ModelShape] | None:
    """(name, layers and attention heads) of a wind tunnel from its saved ``config.json`` (the
    run's ``model/`` or the folder itself): the preset's ``n_layer`` and ``n_head`` (no
    ``n_head``: no attention heads, an LSTM or Mamba); None where it cannot be read.

    Example:
        >>> import tempfile, pathlib
        >>> run = pathlib.Path(tempfile.mkdtemp())
        >>> (run / "model").mkdir()
        >>> _ = (run / "model" / "config.json").write_text(
        ...     '{"bayesgeom_preset": {"n_layer": 6, "n_head": 6}, "num_key_value_heads": 6}')
        >>> tunnel_shape(run)[1]
        ModelShape(n_layers=6, n_heads=6, n_kv_heads=6)
    """
    if not isinstance(spec, str | Path):
        return None
    folder = Path(spec).expanduser()
    for cfg in (folder / "model" / "config.json", folder / "config.json"):
        data = _json(cfg)
        preset = data.get("bayesgeom_preset") if data else None
        if isinstance(preset, dict) and isinstance(preset.get("n_layer"), int):
            heads = preset.get("n_head")
            n = int(heads) if isinstance(heads, int) else 0
            kv = data.get("num_key_value_heads") if data else None
            return str(spec), ModelShape(int(preset["n_layer"]), n,
                                         int(kv) if isinstance(kv, int) else n)
    return None
