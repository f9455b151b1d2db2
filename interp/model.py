"""``InterpModel``: a loaded causal LM with its tokenizer, family adapter and hook backend.

Everything in ``interp`` (capture, interventions, generation) goes through this one object, for
pretrained LLMs and small models alike. Build it with :func:`interp.load`, or wrap any
``*ForCausalLM`` module with ``InterpModel(module)``; a caller may attach a ``task`` (any object:
``interp`` only carries it).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .errors import InterpError, NonFiniteActivationError
from .families import AttentionGeometry, ModuleMap, locate
from .finite import all_finite, first_nonfinite
from .hf_hooks import HFHookBackend, SiteFn
from .model_files import no_tokenizer_message
from .positions import PositionSpec, normalise_positions, position_mask
from .prompts import Prompts, encode_prompts
from .sites import Site, all_sites, parse_sites, valid_site_listing
from .tl_bridge import TransformerLensBackend, build_bridge
from .token_batch import TokenBatch, left_pad

if TYPE_CHECKING:
    from .intervention_kinds import Intervention
    from .interventions import InterventionHandle

BACKENDS = ("hf", "transformer_lens")


@dataclass(frozen=True)
class ModelInfo:
    """Where a model came from (recorded in every capture manifest)."""

    name: str
    source: str  # "hub", "local", "windtunnel", "embedded" or "memory"
    revision: str | None
    dtype: str
    family: str
    model_type: str
    backend: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _n_ctx(model: nn.Module) -> int | None:
    cfg = getattr(model, "config", None)
    for name in ("n_positions", "max_position_embeddings", "n_ctx", "max_seq_len"):
        v = getattr(cfg, name, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def check_logits(logits: torch.Tensor, batch: TokenBatch, edits: Sequence[str]) -> None:
    """Raise :class:`NonFiniteActivationError` if ``logits`` [B, T', V] of an intervened
    forward hold NaN or inf at a real (not padding) token, naming ``edits`` and the first
    prompt and position affected."""
    if all_finite(logits):
        return
    width = logits.shape[1]
    real = batch.attention_mask[:, batch.width - width:].bool()
    found = first_nonfinite(logits, lead=2, where=real)
    if found is None:
        return
    (b, t), kind, _ = found
    prompt, pos = int(batch.prompt_index[b]), t + batch.width - width - int(batch.offsets[b])
    raise NonFiniteActivationError(
        f"{kind} logits at prompt {prompt}, position {pos} under {'; '.join(edits)}: the edit "
        "made the model's values non-finite downstream (too large a scale or shift?), or its "
        "activations were not finite to begin with")


class InterpModel:
    """A causal LM ready for capture and interventions.

    ``hf``: the ``*ForCausalLM`` module; ``tokenizer`` (``None`` for models that take token
    ids, such as wind tunnels); ``task``: whatever the caller attached (``analyses`` attaches a
    wind tunnel's task); ``backend``: ``"hf"`` (forward hooks) or ``"transformer_lens"`` (a
    ``TransformerBridge``, available as ``bridge``).

    Example:
        >>> import torch, transformers
        >>> cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=11)
        >>> m = InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> m.n_layers, m.d_model, m.feature_shape(m.resolve_sites("attn.0.v")[0])
        (2, 16, (2, 8))
    """

    def __init__(
        self,
        hf_model: nn.Module,
        tokenizer: Any | None = None,
        *,
        name: str = "in-memory model",
        source: str = "memory",
        revision: str | None = None,
        task: Any | None = None,
        backend: str = "hf",
        tl_source: str | None = None,
    ):
        if backend not in BACKENDS:
            raise InterpError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        hf_model.eval()
        self.hf = hf_model
        self.tokenizer = tokenizer
        self.task = task
        self.modules: ModuleMap = locate(hf_model)
        self.bridge: Any | None = None
        self.backend: HFHookBackend | TransformerLensBackend
        if backend == "hf":
            self.backend = HFHookBackend(hf_model, self.modules, lambda: self.geometry)
        else:
            _ = self.geometry  # read head counts before the bridge rewraps the modules
            self.bridge = build_bridge(hf_model, tokenizer, tl_source)
            self.backend = TransformerLensBackend(self.bridge, self.modules.n_layers)
        cfg = getattr(hf_model, "config", None)
        self.info = ModelInfo(
            name=name, source=source, revision=revision,
            dtype=str(next(hf_model.parameters()).dtype).removeprefix("torch."),
            family=self.modules.adapter.name, model_type=str(getattr(cfg, "model_type", "?")),
            backend=backend,
        )
        self.n_ctx = _n_ctx(hf_model)
        self.vocab_size: int | None = getattr(cfg, "vocab_size", None)
        self._batch: TokenBatch | None = None
        #: the folder the model was read from (named when text meets a tokenizer-less model)
        self.source_dir = tl_source if source in ("local", "embedded", "windtunnel") else None
        #: labels of the active interventions that check the logits they lead to
        self.checked_edits: list[str] = []

    def __repr__(self) -> str:
        return (f"InterpModel({self.info.name!r}, family={self.info.family}, "
                f"layers={self.n_layers}, backend={self.info.backend})")

    # ------------------------------------------------------------------ structure
    @property
    def n_layers(self) -> int:
        return self.modules.n_layers

    @cached_property
    def geometry(self) -> AttentionGeometry:
        """Heads, kv heads and head size (``geometry.kv_head_of_query`` maps query to kv head)."""
        return self.modules.geometry()

    @property
    def d_model(self) -> int:
        """Residual-stream width, whatever the config calls it."""
        return self.modules.d_model

    def feature_shape(self, site: Site, pattern_width: int | None = None) -> tuple[int, ...]:
        """Shape of one token's row of ``site``: (D,) for residual kinds, (heads, dh) for
        per-head kinds (kv heads for k and v), (V,) for logits, () for the final-norm scale,
        (H, ``pattern_width``) for attention patterns."""
        if site.per_head:
            g = self.geometry
            n = g.n_kv_heads if site.kind in ("attn.k", "attn.v") else g.n_heads
            return (n, g.d_head)
        if site.kind == "attn.pattern":
            if pattern_width is None:
                raise InterpError(f"{site.name}: a pattern row's width is the prompt length")
            return (self.geometry.n_heads, pattern_width)
        if site.kind == "final_norm.scale":
            return ()
        if site.kind == "logits":
            return (int(self.vocab_size or self.d_model),)
        return (self.d_model,)

    def weights_digest(self) -> str:
        """SHA-256 (hex) of every parameter and buffer -- names, dtypes, shapes and bytes, in
        module order -- so any change to the weights (retraining, swapping two layers) changes
        it. About 0.3 s per GB on a CPU with SHA extensions."""
        h = hashlib.sha256()
        with torch.no_grad():
            for name, t in itertools.chain(self.hf.named_parameters(), self.hf.named_buffers()):
                h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
                raw = t.detach().reshape(-1).contiguous().view(torch.uint8).cpu().numpy()
                h.update(raw)  # type: ignore[arg-type]  # a buffer; numpy's stubs say so in 3.12+
        return h.hexdigest()

    def sites(self) -> list[str]:
        """Every valid site name of this model."""
        return [s.name for s in all_sites(self.n_layers)]

    def site_listing(self) -> str:
        return valid_site_listing(self.n_layers)

    def resolve_sites(self, names: str | Sequence[str]) -> list[Site]:
        return parse_sites(list([names] if isinstance(names, str) else names), self.n_layers)

    # ------------------------------------------------------------------ running
    def encode(self, prompts: Prompts) -> tuple[list[list[int]], list[str] | None]:
        """Validated token lists (and texts when prompts are strings)."""
        return encode_prompts(prompts, self.tokenizer, self.n_ctx, self.vocab_size,
                              no_tokenizer_message(self.info.name, self.source_dir))

    @property
    def pad_id(self) -> int:
        tok = self.tokenizer
        for v in (getattr(tok, "pad_token_id", None), getattr(tok, "eos_token_id", None)):
            if isinstance(v, int):
                return v
        return 0

    def batch(self, tokens: Sequence[Sequence[int]], prompt_index: Sequence[int] | None = None,
              ) -> TokenBatch:
        return left_pad(tokens, self.pad_id, prompt_index)

    @property
    def current_batch(self) -> TokenBatch | None:
        """The batch being run (hooks use it to map prompt positions to padded columns)."""
        return self._batch

    def forward(self, batch: TokenBatch, logits_to_keep: int = 0, eager: bool = False,
                ) -> torch.Tensor:
        """Logits [B, T', V] for a padded batch, with hooks active (no gradients). Under an
        intervention (that checks finiteness), non-finite logits raise
        :class:`NonFiniteActivationError` naming the interventions and the prompt."""
        self._batch = batch
        try:
            with torch.no_grad():
                if eager:
                    with self.backend.eager_attention():
                        logits = self.backend.forward(batch, logits_to_keep)
                else:
                    logits = self.backend.forward(batch, logits_to_keep)
        finally:
            self._batch = None
        if self.checked_edits:
            check_logits(logits, batch, self.checked_edits)
        return logits

    def logits(self, prompts: Prompts) -> torch.Tensor:
        """Last-token logits [N, V] (float32) of some prompts, in one batch."""
        tokens, _ = self.encode(prompts)
        return self.forward(self.batch(tokens), logits_to_keep=1)[:, -1].float()

    def generate(self, prompt: str | Sequence[int], max_new_tokens: int = 8) -> list[int]:
        """Greedy continuation token ids (full recompute each step, so active interventions and
        position specs apply exactly as in a plain forward)."""
        tokens, _ = self.encode([prompt])
        seq = list(tokens[0])
        out: list[int] = []
        for _ in range(max_new_tokens):
            if self.n_ctx is not None and len(seq) >= self.n_ctx:
                break
            nxt = int(self.forward(self.batch([seq]), logits_to_keep=1)[0, -1].argmax())
            seq.append(nxt)
            out.append(nxt)
        return out

    def position_mask(self, spec: PositionSpec, width: int, batch_size: int) -> torch.Tensor:
        """[B, width] bool mask of ``spec`` for the running batch (no batch: unpadded rows)."""
        b = self._batch
        norm = normalise_positions(spec)
        if b is None:
            lengths = torch.full((batch_size,), width, dtype=torch.long)
            return position_mask(norm, lengths, width)
        full = position_mask(norm, b.lengths, b.width)
        return full[:, b.width - width:]

    # ------------------------------------------------------------------ hooks
    def add_hook(self, site: str | Site, fn: SiteFn) -> Any:
        """Attach ``fn(x) -> x' | None`` to one site; call ``.remove()`` on the result."""
        s = site if isinstance(site, Site) else self.resolve_sites(site)[0]
        return self.backend.add_hook(s, fn)

    @contextmanager
    def hooks(self, pairs: Sequence[tuple[str | Site, SiteFn]]) -> Iterator[None]:
        """Hooks that are removed on exit, also when the body raises."""
        handles = []
        try:
            for site, fn in pairs:
                handles.append(self.add_hook(site, fn))
            yield
        finally:
            for h in reversed(handles):
                h.remove()

    def intervene(self, *interventions: Intervention, strict: bool = False
                  ) -> InterventionHandle:
        """Shorthand for :func:`interp.interventions.intervene`."""
        from .interventions import intervene

        return intervene(self, *interventions, strict=strict)
