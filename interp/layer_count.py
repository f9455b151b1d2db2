"""A model's layer count (and head counts, :func:`known_shape`) where it is known before the
model loads (no torch): an embedded model's from its catalogue entry, a local folder's from its
``config.json``, a Hub name's from the ``config.json`` already in the Hub cache (at
``revision``, default ``main``; nothing is downloaded). A Hub name not in the cache, a wind
tunnel (whose architectures count layers their own way) or an unreadable config gives None: the
layer options are then checked once the model is loaded (:func:`interp.resolve_layer`).

Example:
    >>> known_layer_count(None), known_layer_count("gemma3")
    (('smollm2-135m-instruct', 30), ('gemma-3-270m', 18))
    >>> known_layer_count("org/some-model") is None
    True
    >>> known_shape(None)
    ('smollm2-135m-instruct', ModelShape(n_layers=30, n_heads=9, n_kv_heads=3))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .embedded_catalogue import resolve
from .patch_cells import ModelShape

#: the ``config.json`` keys that hold the layer count, in the order they are read
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
#: ... the query head count, and the key/value head count (absent: as many as query heads)
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads")
KV_HEAD_KEYS = ("num_key_value_heads",)


def known_layer_count(spec: object, revision: str | None = None) -> tuple[str, int] | None:
    """(name, layer count) of the model ``spec`` names (a model option: None is the default
    model; ``revision``: a Hub name's), or None where it is not known without loading it."""
    known = known_shape(spec, revision)
    return None if known is None else (known[0], known[1].n_layers)


def known_shape(spec: object, revision: str | None = None) -> tuple[str, ModelShape] | None:
    """(name, :class:`~interp.patch_cells.ModelShape`) of the model ``spec`` names, as
    :func:`known_layer_count` finds it; head counts None where the config has none."""
    if spec is None or isinstance(spec, str):
        embedded = resolve(spec)
        if embedded is not None and embedded.n_layers:
            return embedded.name, ModelShape(embedded.n_layers, embedded.n_heads or None,
                                             embedded.n_kv_heads or None)
    if not isinstance(spec, str | Path):
        return None
    folder = Path(spec).expanduser()
    if folder.is_dir():
        return _config_shape(folder / "config.json", str(folder))
    return _hub_cache_shape(str(spec), revision)


def _hub_cache_shape(name: str, revision: str | None) -> tuple[str, ModelShape] | None:
    """A Hub repository's shape from the ``config.json`` the Hub cache holds for it (none
    fetched); None for a name that is no repository id or is not cached."""
    from huggingface_hub import try_to_load_from_cache

    try:
        path = try_to_load_from_cache(name, "config.json", revision=revision)
    except ValueError:  # not a repository id (HFValidationError)
        return None
    return _config_shape(Path(path), name) if isinstance(path, str) else None


def _config_shape(config: Path, name: str) -> tuple[str, ModelShape] | None:
    """The counts in ``config`` (a text model's: the top level, or a multimodal config's
    ``text_config``), shown as ``name``."""
    try:
        cfg = json.loads(config.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict) or "bayesgeom_preset" in cfg \
            or str(cfg.get("model_type", "")).startswith("bayesgeom_"):
        return None  # a wind tunnel: its architectures count layers their own way
    for where in (cfg, cfg.get("text_config")):
        if isinstance(where, dict):
            n = _first_int(where, LAYER_KEYS)
            if n is not None and n > 0:
                heads = _first_int(where, HEAD_KEYS)
                return name, ModelShape(n, heads, _first_int(where, KV_HEAD_KEYS) or heads)
    return None


def _first_int(cfg: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    n = next((cfg[k] for k in keys if isinstance(cfg.get(k), int)), None)
    return n if n is None or n > 0 else None
