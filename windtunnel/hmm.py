"""HMM filtering: track the hidden state of a fresh random HMM from its parameters and observations.

Per sequence: S states, O symbols; each row of the transition matrix T (S×S) and emission matrix
E (S×O) is Dirichlet(1), floored at 0.05, renormalised and discretised to a 0.01 grid with every
entry >= 0.05 and rows summing to exactly 1 (held as integer cents). π₀ is uniform.

Tokens (vocabulary 105 + S output tokens): ids 0..95 are the probabilities 0.05..1.00,
96 ``[TRANS]``, 97 ``[EMIT]``, 98 ``[SEP]``, 99 ``[OBS]``, 100..100+O-1 the observation symbols,
and 105..105+S-1 are *state* tokens, never in the input, that name the hypotheses the model
outputs. Sequence: ``[TRANS] T (S·S) [EMIT] E (S·O) [SEP] ([OBS] o_t) × K`` — a 53-token header
for S = O = 5. The prediction for step t is read at the position of o_t; its target is the exact
filtering posterior p(s_t | o_0..o_t), computed in log space in float64 -- or, with
``target_window = W`` (a training curriculum and diagnostic, not the paper's task), the filter
from the last W observations, :func:`windowed_filter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from ..infotheory import entropy_bits_from_probs
from .evaluate import EVAL_BATCH
from .seeds import Purpose, stream
from .task import TaskBatch, TaskConfigError, TokenTask, config_dict
from .task_configs import HMMConfig
from .task_registry import register_task

FLOOR_CENTS = 5
N_PROB_TOKENS = 96  # 0.05 .. 1.00
TRANS, EMIT, SEP, OBS = 96, 97, 98, 99
OBS_BASE = 100
STATE_BASE = 105


def discretise_rows(p: np.ndarray) -> np.ndarray:
    """Discretise probability rows to integer cents: each entry >= 5, each row sums to 100.

    ``p``: [..., n] rows summing to 1 with n * 5 <= 100. Rounds to the nearest cent, lifts
    entries to the floor, then adds cents to the smallest entries or removes them from the largest
    until the row sums to exactly 100. Returns int64 cents of the same shape.
    """
    p = np.asarray(p, dtype=np.float64)
    n = p.shape[-1]
    if n * FLOOR_CENTS > 100:
        raise TaskConfigError(f"{n} entries cannot each be >= 0.05 and sum to 1")
    c = np.maximum(np.rint(p * 100).astype(np.int64), FLOOR_CENTS)
    flat = c.reshape(-1, n)
    for _ in range(100):
        d = 100 - flat.sum(axis=1)
        if not d.any():
            break
        rows = np.arange(flat.shape[0])
        lo, hi = flat.argmin(axis=1), flat.argmax(axis=1)
        up, down = d > 0, d < 0
        flat[rows[up], lo[up]] += 1
        flat[rows[down], hi[down]] -= 1
    return flat.reshape(c.shape)


def sample_hmm_params(
    rng: np.random.Generator, n: int, S: int, O: int  # noqa: E741
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` HMMs. Returns integer cents (T [n,S,S], E [n,S,O])."""
    mats = []
    for cols in (S, O):
        raw = rng.dirichlet(np.ones(cols), size=(n, S))
        raw = np.maximum(raw, 0.05)
        raw /= raw.sum(axis=-1, keepdims=True)
        mats.append(discretise_rows(raw))
    return mats[0], mats[1]


def filtering_posterior(T: np.ndarray, E: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Exact filtering posterior p(s_t | o_0..o_t) in float64, computed in log space.

    ``T`` [n,S,S] and ``E`` [n,S,O] row-stochastic probabilities; ``obs`` [n,K] ints.
    α₀ ∝ π₀ · E[:, o₀] (no transition at t = 0), α_t ∝ E[:, o_t] · (α_{t-1} T). Returns [n,K,S].
    """
    n, S, _ = T.shape
    K = obs.shape[1]
    logT, logE = np.log(T), np.log(E)
    rows = np.arange(n)
    out = np.empty((n, K, S))
    log_a = np.full((n, S), -np.log(S)) + logE[rows, :, obs[:, 0]]
    for t in range(K):
        if t > 0:
            # log Σ_{s'} α(s') T[s', s]
            m = log_a[:, :, None] + logT
            mx = m.max(axis=1, keepdims=True)
            log_a = (mx + np.log(np.exp(m - mx).sum(axis=1, keepdims=True)))[:, 0]
            log_a = log_a + logE[rows, :, obs[:, t]]
        log_a = log_a - np.logaddexp.reduce(log_a, axis=1, keepdims=True)
        out[:, t] = np.exp(log_a)
    return out


def windowed_filter(T: np.ndarray, E: np.ndarray, obs: np.ndarray, window: int) -> np.ndarray:
    """The filter that sees only the last ``window`` observations: p(s_t | o_{t-w+1..t}) with a
    uniform belief about s_{t-w+1} (the exact filter once t < w). A trivial-baseline ladder for
    the HMM tunnel: how much history a model's predictions are worth. ``T`` [n,S,S], ``E``
    [n,S,O], ``obs`` [n,K] as in :func:`filtering_posterior`; returns [n,K,S].

    Example:
        >>> T = E = np.full((1, 2, 2), 0.5); obs = np.array([[0, 1, 1]])
        >>> windowed_filter(T, E, obs, 1)[0, 2].tolist()
        [0.5, 0.5]
    """
    if window < 1:
        raise TaskConfigError(f"window must be >= 1 observation, got {window}")
    K = obs.shape[1]
    return np.stack([filtering_posterior(T, E, obs[:, max(0, t - window + 1) : t + 1])[:, -1]
                     for t in range(K)], axis=1)


def history_free_filter(T: np.ndarray, E: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """p(s_t | T, E, o_t): the posterior from the current observation and the exact prior
    marginal π₀Tᵗ, ignoring every earlier observation -- what a model that reads the header but
    not the observation history can at best predict (the plateau the CPU-sized transformers sit
    on; see the README). Shapes as in :func:`filtering_posterior`; returns [n,K,S].

    Example:
        >>> T = np.array([[[0.9, 0.1], [0.5, 0.5]]]); E = np.full((1, 2, 2), 0.5)
        >>> history_free_filter(T, E, np.array([[0, 1]]))[0, 1].round(2).tolist()
        [0.7, 0.3]
    """
    n, S, _ = T.shape
    prior = np.full((n, S), 1.0 / S)
    out = np.empty((n, obs.shape[1], S))
    for t in range(obs.shape[1]):
        if t > 0:
            prior = np.einsum("ns,nsr->nr", prior, T)
        a = prior * E[np.arange(n), :, obs[:, t]]
        out[:, t] = a / a.sum(axis=1, keepdims=True)
    return out


def window_ladder(task: HMMTask, windows: Sequence[int], n: int = 2000, seed: int = 0,
                  batch_size: int = EVAL_BATCH) -> dict[int | str, dict[str, Any]]:
    """Per-sample entropy MAE (Paper I, bits) of :func:`windowed_filter` against the exact
    filter, per window, on the held-out sequences :func:`windtunnel.evaluate.evaluate` scores
    (batch ``i`` of ``batch_size`` from stream ``(seed, EVAL, i)``, evaluate's default size).
    Returns ``{w: {"entropy_mae_bits": float, "per_position": [K floats]}}``, and under the
    key ``"history-free"`` the same for :func:`history_free_filter`: the controls a model's
    HMM MAE sits beside (how many observations back its predictions are worth).

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> lad = window_ladder(make_task("hmm", K=4), [1, 4], n=50)
        >>> lad[4]["entropy_mae_bits"] < 1e-12 < lad[1]["entropy_mae_bits"]
        True
    """
    errs: dict[int | str, list[np.ndarray]] = {w: [] for w in (*windows, "history-free")}
    done, i = 0, 0
    while done < n:
        b = task.sample(min(batch_size, n - done), stream(seed, Purpose.EVAL, i))
        T, E, obs = task.decode(b.input_ids.numpy())
        # against the exact filter, whatever the task's target_window
        h = entropy_bits_from_probs(filtering_posterior(T, E, obs))
        for w in errs:
            q = history_free_filter(T, E, obs) if w == "history-free" else \
                windowed_filter(T, E, obs, int(w))
            errs[w].append(np.abs(entropy_bits_from_probs(q) - h))
        done, i = done + len(h), i + 1
    out = {}
    for w, e in errs.items():
        a = np.concatenate(e)
        out[w] = {"entropy_mae_bits": float(a.mean()), "per_position": a.mean(0).tolist()}
    return out


@register_task(HMMConfig)
class HMMTask(TokenTask):
    name = "hmm"
    soft_targets = True
    size_options = ("K",)
    length_option = "K"

    def __init__(self, cfg: HMMConfig):
        if cfg.S < 2 or cfg.O < 2:
            raise TaskConfigError(f"HMM needs S >= 2 and O >= 2, got S={cfg.S}, O={cfg.O}")
        if cfg.S != 5 or cfg.O != 5:
            # The 105-token vocabulary reserves exactly five observation ids (100..104).
            raise TaskConfigError("the HMM tokenizer is defined for S = O = 5 (paper setting)")
        if cfg.K < 1:
            raise TaskConfigError(f"HMM needs K >= 1 observations, got K={cfg.K}")
        if cfg.target_window < 0:
            raise TaskConfigError(f"target_window must be >= 0 observations (0: the exact "
                                  f"filter), got {cfg.target_window}")
        longest = max(cfg.max_K, cfg.K)
        if cfg.target_window > longest:
            raise TaskConfigError(
                f"target_window {cfg.target_window} exceeds the longest sequence this task is "
                f"sized for (K={cfg.K}, max_K={longest}): a window that long is the exact "
                "filter; give target_window 0 (the exact filter) or at most max_K")
        self.cfg = replace(cfg, max_K=longest)
        self.S, self.O, self.K = cfg.S, cfg.O, cfg.K

    @property
    def header_len(self) -> int:
        return 3 + self.S * self.S + self.S * self.O

    @property
    def vocab_size(self) -> int:
        return STATE_BASE + self.S

    @property
    def hyp_slice(self) -> slice:
        return slice(STATE_BASE, STATE_BASE + self.S)

    @property
    def seq_len(self) -> int:
        return self.header_len + 2 * self.K

    @property
    def max_seq_len(self) -> int:
        return self.header_len + 2 * self.cfg.max_K

    @property
    def n_queries(self) -> int:
        return self.K

    def config(self) -> dict[str, Any]:
        """The task's parameters; ``target_window`` only where set, so the paper's task (and
        every run recorded before the option existed) keeps the same settings."""
        d = config_dict(self.name, self.cfg)
        return d if d["target_window"] else {k: v for k, v in d.items() if k != "target_window"}

    def with_K(self, K: int) -> HMMTask:
        """The same task (its ``target_window`` too) at another sequence length (for length
        generalisation)."""
        if self.cfg.max_K < K:
            raise TaskConfigError(f"K={K} exceeds max_K={self.cfg.max_K} this task was sized for")
        return HMMTask(replace(self.cfg, K=K))

    def at_length(self, value: int) -> HMMTask:
        return self.with_K(value)

    def describe_tokens(self) -> dict[str, Any]:
        return {
            **super().describe_tokens(),
            "prob_tokens": "0..95 = 0.05..1.00",
            "specials": {"[TRANS]": TRANS, "[EMIT]": EMIT, "[SEP]": SEP, "[OBS]": OBS},
            "obs_symbols": [OBS_BASE, OBS_BASE + self.O - 1],
            "state_tokens": [STATE_BASE, STATE_BASE + self.S - 1],
            "header_len": self.header_len,
        }

    def decode(self, input_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The HMM a batch's tokens state: (T [n,S,S], E [n,S,O] probabilities, obs [n,K])."""
        ids = np.asarray(input_ids)
        n, S, O = ids.shape[0], self.S, self.O  # noqa: E741
        T = (ids[:, 1 : 1 + S * S].reshape(n, S, S) + FLOOR_CENTS) / 100.0
        E = (ids[:, 2 + S * S : 2 + S * S + S * O].reshape(n, S, O) + FLOOR_CENTS) / 100.0
        return T, E, ids[:, self.header_len + 1 :: 2] - OBS_BASE

    def target_posterior(self, T: np.ndarray, E: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The posterior this task's batches carry, [n, K, S] float64 (shapes as
        :func:`filtering_posterior`): the exact filter, or with ``target_window`` W the
        filter from the last W observations (:func:`windowed_filter`)."""
        W = self.cfg.target_window
        return windowed_filter(T, E, obs, W) if W else filtering_posterior(T, E, obs)

    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch:
        S, O, K = self.S, self.O, self.K  # noqa: E741
        Tc, Ec = sample_hmm_params(rng, n, S, O)
        T, E = Tc / 100.0, Ec / 100.0
        rows = np.arange(n)
        states = np.empty((n, K), dtype=np.int64)
        obs = np.empty((n, K), dtype=np.int64)
        s = rng.integers(0, S, size=n)
        for t in range(K):
            states[:, t] = s
            obs[:, t] = _categorical(rng, E[rows, s])
            s = _categorical(rng, T[rows, s])
        post = self.target_posterior(T, E, obs)

        ids = np.empty((n, self.seq_len), dtype=np.int64)
        ids[:, 0] = TRANS
        ids[:, 1 : 1 + S * S] = Tc.reshape(n, -1) - FLOOR_CENTS
        ids[:, 1 + S * S] = EMIT
        ids[:, 2 + S * S : 2 + S * S + S * O] = Ec.reshape(n, -1) - FLOOR_CENTS
        ids[:, self.header_len - 1] = SEP
        ids[:, self.header_len :: 2] = OBS
        ids[:, self.header_len + 1 :: 2] = OBS_BASE + obs
        qpos = self.header_len + 1 + 2 * np.arange(K)
        return TaskBatch(
            input_ids=torch.from_numpy(ids),
            query_pos=torch.from_numpy(qpos.astype(np.int64)),
            targets=torch.from_numpy(states),
            posterior=torch.from_numpy(post),
            entropy_bits=torch.from_numpy(entropy_bits_from_probs(post)),
        )


def _categorical(rng: np.random.Generator, p: np.ndarray) -> np.ndarray:
    """One draw per row of ``p`` [n, k] by inverse CDF."""
    u = rng.random((p.shape[0], 1))
    idx = (np.cumsum(p, axis=1) < u).sum(axis=1)
    return np.minimum(idx, p.shape[1] - 1)
