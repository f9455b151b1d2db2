"""One capture path for a wind-tunnel transformer and a pretrained LLM, then a causal check.

    python examples/same_probe_small_and_large.py --run runs/examples/bijection-quickstart

1. Capture last-layer value vectors (``attn.-1.v``) of a trained wind-tunnel run and of the
   embedded SmolLM2-135M with the *same* call, and correlate each one's leading axis with the
   entropy it should track (the exact Bayes posterior entropy for the wind tunnel; the model's
   own next-token entropy for the LLM).
2. On SmolLM2: fit an entropy axis on the final residual stream and shift along it by ±1σ
   inside a removable intervention, next to a norm-matched random control direction.

The axis is fitted and shifted on the same 16 prompts: a demonstration of the API, not an
experiment. Run ``examples/windtunnel_quickstart.py`` first (or pass any run directory to
``--run``).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from bayesgeom import interp
from bayesgeom.probes import fit_entropy_axis, spearman
from bayesgeom.windtunnel import make_task

PROMPTS = [
    "The capital of France is", "Water boils at a temperature of", "Once upon a time, there",
    "def fibonacci(n):\n    if n <", "The derivative of x squared is", "My favourite colour is",
    "In 1492, Columbus sailed", "import numpy as", "The opposite of hot is",
    "She opened the door and",
    "The quick brown fox jumps over the", "To be or not to be, that is the", "2 + 2 =",
    "Dear Sir or Madam,", "The weather today is", "Photosynthesis converts sunlight into",
]


def leading_axis_rho(values: torch.Tensor, entropy: np.ndarray) -> float:
    """Spearman ρ between PC1 of the flattened value vectors [N, ...] and entropy (bits)."""
    axis = fit_entropy_axis(values.flatten(1).numpy(), entropy, method="pc1")
    return float(spearman(axis.project(values.flatten(1).numpy()), entropy))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default="runs/examples/bijection-quickstart")
    args = ap.parse_args()

    # 1. The same call on a small and a large model.
    small = interp.load(f"{args.run}/model")
    batch = make_task("bijection", V=20).sample(64, seed=123)
    # every supervised position (rows are prompt-major, then position order)
    qpos = batch.query_pos.tolist()
    wt = interp.capture(small, batch, ["attn.-1.v"], positions=qpos, progress=False)
    bayes_h = batch.entropy_bits.flatten().numpy()
    print(f"wind tunnel: attn.-1.v {tuple(wt['attn.-1.v'].shape)}; "
          f"rho(PC1, Bayes entropy) = {leading_axis_rho(wt['attn.-1.v'], bayes_h):+.3f}")

    llm = interp.load()  # embedded SmolLM2-135M, offline
    big = interp.capture(llm, PROMPTS, ["attn.-1.v", "resid_post.-1"], progress=False)
    h = big.entropy_bits.numpy()
    print(f"SmolLM2:     attn.-1.v {tuple(big['attn.-1.v'].shape)}; "
          f"rho(PC1, next-token entropy) = {leading_axis_rho(big['attn.-1.v'], h):+.3f}")

    # 2. Shift the final residual stream along its entropy axis, and along a random control.
    axis = fit_entropy_axis(big["resid_post.-1"].numpy(), h, method="ridge", standardize=False)
    u = torch.as_tensor(axis.readout_direction, dtype=torch.float32)
    control = interp.random_controls(u, n=1, seed=0)[0]
    base = interp.capture(llm, PROMPTS, ["logits"], progress=False).entropy_bits
    for name, direction in [("entropy axis", u), ("random control", control)]:
        sigma = interp.projection_std(big["resid_post.-1"], direction)  # each direction's own σ
        for delta in (-1.0, 1.0):
            shift = interp.ShiftAlong("resid_post.-1", direction, delta, sigma=sigma,
                                      positions="last")
            with interp.intervene(llm, shift):
                moved = interp.capture(llm, PROMPTS, ["logits"], progress=False).entropy_bits
            print(f"{name:15s} shift {delta:+.0f} sigma: mean next-token entropy "
                  f"{base.mean():.3f} -> {moved.mean():.3f} bits")


if __name__ == "__main__":
    main()
