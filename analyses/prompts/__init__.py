"""The prompt data layer: real text by domain (:mod:`.corpora`, cut by :mod:`.segmentation`),
the candidate prompt pool (:mod:`.pool`), prefixes of wind-tunnel sequences (:mod:`.tasks`),
SULA prompts for one tokenizer (:mod:`.sula`) and passkey prompts of exact token lengths
(:mod:`.passkey`)."""

from ...records.lazy import submodules

#: each subpackage and module by its name, imported on first use (``bg.analyses.prompts.pool``)
__getattr__ = submodules(__name__)
