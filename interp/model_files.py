"""What a model directory holds, checked before ``from_pretrained`` reads it.

bayesgeom loads **safetensors only** unless told otherwise: a directory (or a cached Hub repo)
whose weights are pickle files only (``pytorch_model.bin``, ``*.bin`` shards) is refused with one
line that says how to convert it, or that ``allow_pickle=True`` loads it through transformers
(which unpickles with ``torch.load(weights_only=True)``: tensors and plain containers only).
Every ``*.safetensors`` file is checked against its own header first
(:func:`records.check_safetensors`, reading 8 bytes plus the header), so a truncated or corrupt
file is one :class:`records.FileFault` line naming it, not a traceback from deep in the loader.
After the load, :func:`loading_problem` refuses weights that do not fill the model the config
builds (a layer missing, a tensor too many, another shape), which transformers would leave at
random with a warning.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "pytorch_model.bin").write_bytes(b"pickle")
    >>> weight_files(d)
    ([], ['pytorch_model.bin'])
    >>> has_tokenizer_files(d)
    False
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..records import SAFE_INDEX, check_safetensors, safetensors_shards
from .errors import ModelNotAvailableError, PickleWeightsError

#: files any one of which means a directory carries its tokenizer
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
#: pickle files that are not weights
NOT_WEIGHTS = ("training_args.bin",)


def damaged_fix(where: str | Path) -> str:
    return f"the file is damaged; replace it (re-save or re-download {where})"


def pickle_refusal(where: str | Path, files: list[str]) -> PickleWeightsError:
    """The one-line refusal of a model whose weights are pickle ``files`` only."""
    shown = ", ".join(files[:2]) + (" ..." if len(files) > 2 else "")
    return PickleWeightsError(
        f"{where} holds pickle weights only ({shown}); bayesgeom loads safetensors only: "
        f"convert it once with AutoModelForCausalLM.from_pretrained(dir).save_pretrained(dir, "
        "safe_serialization=True), or pass allow_pickle=True to load it through transformers "
        "(torch.load with weights_only=True)")


def weight_files(d: Path) -> tuple[list[str], list[str]]:
    """(safetensors files, pickle weight files) directly in ``d``, by name."""
    safe = sorted(p.name for p in d.glob("*.safetensors") if p.is_file())
    pickle = sorted(p.name for p in d.glob("*.bin") if p.is_file() and p.name not in NOT_WEIGHTS)
    return safe, pickle


def check_weight_files(d: Path, allow_pickle: bool) -> bool:
    """Check a local model directory's weights before loading; returns whether they are
    safetensors (else pickle, allowed). Raises :class:`PickleWeightsError` for pickle-only
    weights without ``allow_pickle``, :class:`ModelNotAvailableError` for no weights or a
    shard its index lists but the folder lacks, ``FileFault`` for a damaged safetensors file."""
    safe, pickle = weight_files(d)
    index = d / SAFE_INDEX
    if index.is_file():
        missing = sorted(set(safetensors_shards(index, fix=damaged_fix(d))) - set(safe))
        if missing:
            raise ModelNotAvailableError(f"{d} lacks {missing[0]} (listed in {SAFE_INDEX}); "
                                         "copy every shard of the model")
    if safe:
        for name in safe:
            check_safetensors(d / name, fix=damaged_fix(d))
        return True
    if pickle:
        if not allow_pickle:
            raise pickle_refusal(d, pickle)
        return False
    raise ModelNotAvailableError(f"{d} holds no model weights (no *.safetensors file); save the "
                                 "model there with save_pretrained")


def check_cached_hub_files(name: str, revision: str | None) -> None:
    """Check the safetensors files of Hub model ``name`` already in the local HF cache (a
    truncated download is one ``FileFault`` line naming the cached file)."""
    from huggingface_hub import try_to_load_from_cache

    def cached(filename: str) -> Path | None:
        try:
            hit = try_to_load_from_cache(name, filename, revision=revision)
        except Exception:  # malformed repo ids raise validation errors
            return None
        return Path(hit) if isinstance(hit, str) else None

    files = [cached("model.safetensors")]
    index = cached(SAFE_INDEX)
    if index is not None:
        files += [cached(f) for f in safetensors_shards(index, damaged_fix(f"the cached {name}"))]
    for f in files:
        if f is not None:
            check_safetensors(f, fix=f"{damaged_fix(name)}: delete it from the Hugging Face "
                                     "cache and download it again")


def has_tokenizer_files(d: Path) -> bool:
    """Whether the model directory ``d`` carries a tokenizer."""
    return any((d / f).is_file() for f in TOKENIZER_FILES)


def no_tokenizer_message(name: str, directory: str | Path | None) -> str:
    """What to say when text prompts reach a model without a tokenizer."""
    if directory is None:
        return f"{name} has no tokenizer; pass token ids instead of text"
    return (f"{name} has no tokenizer (no tokenizer.json / tokenizer_config.json in "
            f"{directory}); add the tokenizer files or pass token ids")


def loading_problem(where: str | Path, info: Mapping[str, Any]) -> str | None:
    """One line on why a load's tensors are not the checkpoint's, from transformers' loading
    info (``from_pretrained(..., output_loading_info=True)``): tensors the config declares that
    the weights lack (they would be left at random), tensors in the weights the config has no
    place for, tensors of another shape, and the loader's own errors; None when the weights fill
    the model exactly (transformers leaves tied weights out of the missing ones).

    Example:
        >>> loading_problem("m", {"missing_keys": set(), "unexpected_keys": set()}) is None
        True
        >>> line = loading_problem("m", {"missing_keys": {"layers.2.w", "norm.w"}})
        >>> line.split(": ")[1].split(";")[0]
        '2 tensors missing from the weights, which would be random (layers.2.w, norm.w)'
    """
    what = {"missing_keys": "missing from the weights, which would be random",
            "unexpected_keys": "in the weights with no place in the model the config builds",
            "mismatched_keys": "in the weights of another shape than the config's"}
    parts = []
    for key, said in what.items():
        names = sorted(k[0] if isinstance(k, tuple) else str(k) for k in info.get(key) or ())
        if names:
            shown = ", ".join(names[:2]) + (" ..." if len(names) > 2 else "")
            parts.append(f"{len(names)} tensor{'s' * (len(names) != 1)} {said} ({shown})")
    errors = [str(e).strip().splitlines()[0] for e in info.get("error_msgs") or ()
              if str(e).strip()]
    if errors:
        parts.append(f"the loader reports: {errors[0][:160]}")
    if not parts:
        return None
    return (f"the weights of {where} do not fill its config.json: {'; '.join(parts)}; re-save the "
            "model from the code that made it, or correct config.json")
