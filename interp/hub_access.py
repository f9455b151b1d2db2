"""Decide, within seconds, whether a Hugging Face Hub name can be loaded here.

Without this, a name that is neither cached nor reachable makes ``from_pretrained`` retry for
most of a minute before failing. Here a cached model loads with ``local_files_only``; an uncached
one is fetched only when the Hub endpoint answers a 3-second connection probe; otherwise
:class:`ModelNotAvailableError` says how to fix it.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

from .errors import ModelNotAvailableError

PROBE_TIMEOUT_S = 3.0


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def hub_reachable(timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a TCP connection to the Hub endpoint opens within ``timeout`` seconds."""
    url = urlparse(hub_endpoint())
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def is_cached(name: str, revision: str | None = None) -> bool:
    """Whether the model's ``config.json`` is in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(name, "config.json", revision=revision)
    except Exception:  # malformed repo ids raise validation errors
        return False
    return isinstance(hit, str)


def hub_load_kwargs(name: str, revision: str | None = None) -> dict[str, bool]:
    """``from_pretrained`` kwargs for a Hub name, or raise fast if it cannot be had."""
    from huggingface_hub import constants

    cached = is_cached(name, revision)
    if hub_offline():
        if cached:
            return {"local_files_only": True}
        reason = "HF_HUB_OFFLINE is set, so nothing is downloaded"
    elif hub_reachable():
        return {"local_files_only": False}
    elif cached:
        return {"local_files_only": True}
    else:
        reason = f"the Hub ({hub_endpoint()}) is unreachable from this machine"
    rev = f" at revision {revision!r}" if revision else ""
    raise ModelNotAvailableError(
        f"model {name!r}{rev} is not available: it is not in the local Hugging Face cache "
        f"({constants.HF_HUB_CACHE}) and {reason}. To fix: pass a local directory written by "
        f"save_pretrained (--model /path/to/dir); or download it once where the Hub is reachable "
        f"(`hf download {name}`) into this cache or a HF_HOME you point at; or unset "
        "HF_HUB_OFFLINE when online. The bundled model 'smollm2-135m-instruct' always works "
        "offline."
    )
