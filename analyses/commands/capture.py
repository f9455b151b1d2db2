"""``bayesgeom capture`` (activations at named sites to a store) and ``bayesgeom models``
(families, the default model and its cache)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...records import option, read_text, seed_option
from ...records.links import broken_link
from ..kit.options import (
    CLIError,
    add_options,
    allow_pickle_option,
    batch_size_option,
    config_from_args,
    dtype_option,
    model_option,
    out_path,
    restart_option,
)
from ..kit.shard_options import Sharded


def positions(text: str) -> str | tuple[int, ...]:
    if text in ("last", "all"):
        return text
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"positions must be 'last', 'all' or comma-separated indices, not {text!r}"
        ) from None


@dataclass
class CaptureOptions(Sharded):
    model: str | None = model_option()
    prompts: Path = option(Path("prompts.txt"), "text file, one prompt per line", required=True)
    sites: tuple[str, ...] = option(
        (), "site names, e.g. resid_post.* attn.-1.v attn.-1.pattern logits", required=True)
    positions: str | tuple[int, ...] = option(
        "last", "last, all, or comma-separated indices such as 0,-1", parse=positions)
    out: Path = option(Path("runs/capture"), "store directory (an unfinished one resumes)",
                       required=True, parse=out_path)
    backend: str = option("hf", "hook backend", choices=("hf", "transformer_lens"))
    batch_size: int = batch_size_option(8)
    shard_prompts: int | None = option(
        None, "prompts per shard (default: about 32 MiB of activations per shard)", min=1)
    dtype: str | None = dtype_option()
    allow_pickle: bool = allow_pickle_option()
    restart: bool = restart_option()
    store_dtype: str = option("float32", "stored dtype",
                              choices=("float32", "float16", "bfloat16"))
    device: str | None = option(None, "torch device, e.g. cuda:0")
    revision: str | None = option(None, "Hub revision (branch, tag or commit)")
    seed: int = seed_option()


def check_model_name(spec: str | None) -> None:
    """A missing extra (``--model gemma3-270m`` without ``bayesgeom[gemma]``) or a near miss of
    a bundled model's name (``smolm2``): one line before torch is imported
    (:func:`interp.embedded_catalogue.check_spec`, a package and a cache lookup)."""
    from ...interp.embedded_catalogue import check_spec
    from ...interp.errors import ModelNotAvailableError

    try:
        check_spec(spec)
    except ModelNotAvailableError as e:
        raise CLIError(str(e)) from None


def check_site_names(spec: str | None, sites: tuple[str, ...],
                     revision: str | None = None) -> None:
    """Site names that name no site of the model (``attn.x.v``, a layer it lacks): one line
    before torch is imported, where the model's layer count is known without loading it
    (:func:`interp.layer_count.known_layer_count`; otherwise once it is open)."""
    from ...interp.errors import UnknownSiteError
    from ...interp.layer_count import known_layer_count
    from ...interp.sites import parse_sites

    known = known_layer_count(spec, revision)
    if known is not None:
        try:
            parse_sites(list(sites), known[1])
        except UnknownSiteError as e:
            raise CLIError(str(e)) from None


def read_prompts(path: Path) -> list[str]:
    """One prompt per line of a UTF-8 file (a leading byte-order mark dropped); a blank line is
    an error (it would shift every prompt index)."""
    lines = read_text(path, "prompts file").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    if not lines:
        raise CLIError(f"{path} holds no prompts (one prompt per line)")
    nul = next((i for i, line in enumerate(lines, 1) if "\x00" in line), None)
    if nul is not None:
        raise CLIError(f"{path}: line {nul} holds a NUL byte; save the prompts as plain text")
    blank = next((i for i, line in enumerate(lines, 1) if not line.strip()), None)
    if blank is not None:
        raise CLIError(f"{path}: line {blank} is empty; remove blank lines (one prompt per "
                       "line)")
    return lines


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    c = sub.add_parser("capture", parents=[parent],
                       help="capture model activations at named sites to a store")
    add_options(c, CaptureOptions)  # a light config: added now
    c.set_defaults(run=capture)
    m = sub.add_parser("models", parents=[parent],
                       help="list model families, the default model and its cache")
    m.set_defaults(run=models)


def capture(ns: argparse.Namespace) -> int:
    o = config_from_args(CaptureOptions, ns)  # the options, before torch is imported
    check_model_name(o.model)
    check_site_names(o.model, o.sites, o.revision)
    link = broken_link(o.out)
    if link is not None:
        raise CLIError(f"{link}; remove the link or choose another --out")
    prompts = read_prompts(o.prompts)
    from ...interp.prompt_count import check_prompt_count

    check_prompt_count(prompts)  # before torch or the model loads
    if o.sharded:
        from .capture_shards import check_sharding, run_sharded

        check_sharding(o, len(prompts))
        store = run_sharded(o, prompts, progress=not ns.no_progress)
        return _said(ns, o, store, len(prompts), o.model or "the default model",
                     f"{o.workers} workers")
    from ...interp import capture as run_capture
    from ...interp.activation_store import check_store_dir
    from ..kit.models import open_model

    check_store_dir(o.out)  # before any model is loaded or converted
    model = open_model(o.model, dtype=o.dtype, device=o.device, revision=o.revision,
                       backend=o.backend, allow_pickle=o.allow_pickle)
    store = run_capture(model, prompts, list(o.sites), o.positions, batch_size=o.batch_size,
                        out=o.out, prompts_per_shard=o.shard_prompts,
                        store_dtype=o.store_dtype, progress=not ns.no_progress, seed=o.seed,
                        restart=o.restart)
    return _said(ns, o, store, len(prompts), model.info.name, f"backend {model.info.backend}",
                 model.info.to_dict())


def _said(ns: argparse.Namespace, o: CaptureOptions, store: Any, n_prompts: int,
          name: str, how: str, info: dict | None = None) -> int:
    """Print what was captured (``--json``: one object; a sharded capture adds who ran each
    part) and return the exit status 0."""
    if ns.json:
        said = {"rows": len(store), "sites": store.sites, "out": str(o.out),
                "model": info or store.manifest.get("model")}
        if info is None:
            said["workers"] = store.manifest.get("workers")
        print(json.dumps(said))
    else:
        print(f"captured {len(store)} rows x {len(store.sites)} sites from {n_prompts} "
              f"prompts ({name}, {how}) -> {o.out}")
    return 0


def models(ns: argparse.Namespace) -> int:
    from ...interp import embedded_model
    from ...interp.families import FAMILIES
    from ...interp.model import BACKENDS
    from ...interp.user_cache import cache_root

    embedded = [embedded_model.cache_info(m) for m in embedded_model.MODELS]
    info = {
        "families": [{"name": f.name, "model_types": list(f.model_types),
                      "description": f.description} for f in FAMILIES],
        "generic": "any other HF causal LM with standard module names (q_proj/k_proj/v_proj, "
                   "or a fused qkv_proj)",
        "default_model": embedded[0],
        "embedded_models": embedded,
        "cache_root": str(cache_root()),
        "backends": list(BACKENDS),
    }
    if ns.json:
        print(json.dumps(info))
        return 0
    print("families with first-class adapters:")
    for f in info["families"]:
        print(f"  {f['name']:<10} {f['description']}")
    print(f"  {'generic':<10} {info['generic']}")
    for i, d in enumerate(embedded):
        state = {"cached": f"cached ({d['cache_bytes'] / 2**20:.0f} MiB, checksums verified)",
                 "damaged": f"damaged ({d.get('reason')}); the next load rebuilds it",
                 "not converted": "not converted yet"}.get(d.get("state"), str(d.get("state")))
        if not d["installed"]:
            state = f"not installed: {d['install']}"
        print(f"{'default model' if i == 0 else 'embedded model'}: {d['name']} "
              f"(also {', '.join(d['aliases'])}) - {d['description']}; licence {d['licence']}")
        print(f"  cache: {d['cache_dir']} [{state}]")
    print(f"backends: {', '.join(info['backends'])}")
    return 0
