"""A model's layer count where it is known before the model loads (no torch): an embedded
model's from its catalogue entry, a local folder's from its ``config.json``, a Hub name's from
the ``config.json`` already in the Hub cache (at ``revision``, default ``main``; nothing is
downloaded). A Hub name not in the cache, a wind tunnel (whose architectures count layers their
own way) or an unreadable config gives None: the layer options are then checked once the model
is loaded (:func:`interp.resolve_layer`).

Example:
    >>> known_layer_count(None), known_layer_count("gemma3")
    (('smollm2-135m-instruct', 30), ('gemma-3-270m', 18))
    >>> known_layer_count("org/some-model") is None
    True
"""

from __future__ import annotations

import json
from pathlib import Path

from .embedded_catalogue import resolve

#: the ``config.json`` keys that hold the layer count, in the order they are read
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")


def known_layer_count(spec: object, revision: str | None = None) -> tuple[str, int] | None:
    """(name, layer count) of the model ``spec`` names (a model option: None is the default
    model; ``revision``: a Hub name's), or None where it is not known without loading it."""
    if spec is None or isinstance(spec, str):
        embedded = resolve(spec)
        if embedded is not None and embedded.n_layers:
            return embedded.name, embedded.n_layers
    if not isinstance(spec, str | Path):
        return None
    folder = Path(spec).expanduser()
    if folder.is_dir():
        return _config_count(folder / "config.json", str(folder))
    return _hub_cache_count(str(spec), revision)


def _hub_cache_count(name: str, revision: str | None) -> tuple[str, int] | None:
    """A Hub repository's count from the ``config.json`` the Hub cache holds for it (none
    fetched); None for a name that is no repository id or is not cached."""
    from huggingface_hub import try_to_load_from_cache

    try:
        path = try_to_load_from_cache(name, "config.json", revision=revision)
    except ValueError:  # not a repository id (HFValidationError)
        return None
    return _config_count(Path(path), name) if isinstance(path, str) else None


def _config_count(config: Path, name: str) -> tuple[str, int] | None:
    """The count in ``config`` (a text model's: the top level, or a multimodal config's
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
            n = next((where[k] for k in LAYER_KEYS if isinstance(where.get(k), int)), None)
            if n is not None and n > 0:
                return name, n
    return None
