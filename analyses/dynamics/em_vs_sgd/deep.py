"""The ``--deep`` variant of ``bayesgeom dynamics em-vs-sgd`` and the final-model metrics.

The 4-block transformer (:class:`windtunnel.sticky_chain.DeepStickyTransformer`) is trained on
the seed's sequence with AdamW (lr 3e-4, wd 0.01, cosine over ``deep_steps``, clip 1.0) and
evaluated (dropout off) on a fresh sequence from seed + 10000. Only AdamW runs there: an
EM-like M-step is not defined for stacked heads with a fused QKV projection, and a 10× lr on
the value projections would need splitting that fusion.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ....records.progress import tqdm
from ....windtunnel import sticky_chain as sc

DEEP_LR, DEEP_WD, DEEP_CLIP = 3e-4, 0.01, 1.0


@torch.no_grad()
def final_metrics(logits: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
    """Loss, mean predictive entropy (nats) and accuracy of ``logits`` [T, n]."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    return {"final_loss": float(F.nll_loss(logp, targets)),
            "entropy": float(-(logp.exp() * logp).sum(-1).mean()),
            "accuracy": float((logits.argmax(-1) == targets).double().mean())}


def train_deep(seed: int, steps: int, bar: tqdm | None = None, length: int = sc.SEQ_LEN,
               ) -> tuple[np.ndarray, dict[str, float], float]:
    """The deep variant for ``seed``: (training losses [steps + 1], test metrics, final training
    loss); sequences of ``length`` states. Initialisation and dropout draw from the global
    torch RNG seeded with ``seed`` inside :func:`torch.random.fork_rng` (the caller's RNG
    state is untouched)."""
    train = sc.make_sequence(seed, length)
    test = sc.make_sequence(seed + sc.TEST_SEED_OFFSET, length)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = sc.DeepStickyTransformer()
        opt = torch.optim.AdamW(model.parameters(), lr=DEEP_LR, weight_decay=DEEP_WD)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        losses = np.empty(steps + 1)
        model.train()
        for k in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(train.inputs), train.targets)
            losses[k] = loss.item()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), DEEP_CLIP)
            opt.step()
            sched.step()
            if bar is not None:
                bar.update()
        model.eval()
        with torch.no_grad():
            tr = final_metrics(model(train.inputs), train.targets)["final_loss"]
            losses[steps] = tr
            return losses, final_metrics(model(test.inputs), test.targets), tr
