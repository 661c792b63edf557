"""The GRPO objective with diagnostic token weights, as pure tensor functions (paper 3.5, B.4, D.3, G.3).

- :func:`group_advantages`: A_i = (r_i - mean_group) / (std_group + eps) over the responses of a
  group that have a reward. A missing reward (``None``: judge failure) drops the response; a group
  with fewer than 2 rewarded responses, or zero variance, contributes nothing and is counted.
- :func:`policy_weights`: the training mode picks the weight rule of ``tasks.attribution.weights``
  (the one owner of the sign rule and, through ``AttributionConfig``, of every weight) by
  ``schemas.config.train.RULE_OF_MODE``: binary and hierarchical use uniform weights (standard
  GRPO), ``full`` the sign rule of G.3, ``unconditional`` the 4.4 ablation.
- :func:`token_loss`: -w_{i,t} * min(rho A, clip(rho, 1-eps_low, 1+eps_high) A) per response token,
  plus beta * k3 KL to a reference policy (unweighted, off by default).
- The step loss is the sum of token terms divided by the count of response tokens entering the
  objective in the WHOLE step (all micro-batches, all ranks) — never by the sum of weights, which
  would cancel the 1.2 — so the gradient does not depend on how the step is split.

Departures / choices (the paper leaves them open): std is the unbiased sample std (torch default);
tokens of dropped responses and of groups that contribute nothing are excluded from the count, so a
step where every group is degenerate makes no update. Ratios are to the behaviour policy's logprobs
as reported by the rollout engine (tempered, untruncated: paper D.4 samples with top-k above vocab).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from schemas.config.attribution import AttributionConfig
from schemas.config.train import RULE_OF_MODE, Mode
from tasks.attribution.weights import token_weights


@dataclass(frozen=True)
class GroupAdvantages:
    advantages: list[float]  # (N,) 0.0 where dropped or the group contributes nothing
    retained: list[bool]  # (N,) has a reward
    informative: list[bool]  # (N,) retained and in a group with >= 2 rewards and non-zero variance
    n_groups: int
    n_degenerate_groups: int  # fewer than 2 rewarded responses, or zero variance
    n_dropped: int  # responses with a missing reward


def group_advantages(rewards: Sequence[float | None], group_ids: Sequence[int], eps: float = 1e-6) -> GroupAdvantages:
    """Group-relative advantages over rewarded responses; see the module docstring."""
    if len(rewards) != len(group_ids):
        raise ValueError(f"{len(rewards)} rewards but {len(group_ids)} group ids; pass one group id per response")
    n = len(rewards)
    adv, informative = [0.0] * n, [False] * n
    retained = [r is not None and math.isfinite(float(r)) for r in rewards]
    for r, ok in zip(rewards, retained):
        if r is not None and not ok:
            raise ValueError(f"reward {r!r} is not finite; return None for a missing reward instead")
    groups: dict[int, list[int]] = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(g, []).append(i)
    degenerate = 0
    for members in groups.values():
        idx = [i for i in members if retained[i]]
        vals = torch.tensor([float(rewards[i]) for i in idx], dtype=torch.float64)  # type: ignore[arg-type]
        if len(idx) < 2 or float(vals.std()) == 0.0:
            degenerate += 1
            continue
        a = (vals - vals.mean()) / (vals.std() + eps)
        for i, v in zip(idx, a.tolist()):
            adv[i], informative[i] = v, True
    return GroupAdvantages(adv, retained, informative, len(groups), degenerate, sum(not r for r in retained))


def policy_weights(membership, advantage: float, mode: Mode, uniform: bool = False,
                   attribution: AttributionConfig | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-token ``(weights >= 0, advantage sign multiplier in {+1, -1})`` for one response, (T,) float64.

    ``membership``: (T,) codes of ``tasks.attribution.weights`` per generated token. ``uniform``:
    findings were present but none could be localised (B.4).
    """
    if mode not in RULE_OF_MODE:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(RULE_OF_MODE)}")
    codes = membership.numpy() if isinstance(membership, torch.Tensor) else membership
    return token_weights(codes, advantage, attribution, uniform=uniform, rule=RULE_OF_MODE[mode])


@dataclass
class TokenStats:
    clipped: torch.Tensor  # (M, T) bool: the clipped branch is the active one
    kl: torch.Tensor  # (M, T) k3 estimate (0 without a reference)
    ratio: torch.Tensor  # (M, T)


def token_loss(logp: torch.Tensor, old_logp: torch.Tensor, token_adv: torch.Tensor, weights: torch.Tensor,
               mask: torch.Tensor, eps_low: float, eps_high: float, ref_logp: torch.Tensor | None = None,
               kl_coef: float = 0.0) -> tuple[torch.Tensor, TokenStats]:
    """Per-token loss terms (M, T), zero outside ``mask``; sum them and divide by the step's token count.

    logp, old_logp, ref_logp: (M, T) logprobs of the target tokens under the current, behaviour and
    reference policies; token_adv: (M, T) A_i times the sign multiplier; weights: (M, T) w_{i,t}.
    """
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * token_adv
    clipped_ratio = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    clipped = clipped_ratio * token_adv
    surrogate = torch.minimum(unclipped, clipped)
    per_token = -weights * surrogate
    kl = torch.zeros_like(logp)
    if ref_logp is not None and kl_coef > 0:
        log_r = ref_logp - logp
        kl = torch.exp(log_r) - log_r - 1.0  # k3: unbiased, non-negative
        per_token = per_token + kl_coef * kl  # the KL term is not weighted
    per_token = torch.where(mask, per_token, torch.zeros_like(per_token))
    stats = TokenStats(clipped=(clipped < unclipped) & mask, kl=kl.detach() * mask, ratio=ratio.detach())
    return per_token, stats


def step_loss_scale(n_step_tokens: int, world_size: int) -> float:
    """Factor turning a micro-batch's summed token terms into its share of the step loss.

    DeepSpeed averages gradients over data-parallel ranks, so each rank multiplies by world_size;
    dividing by the step's token count makes the sum over all micro-batches and ranks the step mean.
    """
    if n_step_tokens <= 0:
        raise ValueError("no response tokens enter the objective this step; the caller must skip the update")
    return world_size / n_step_tokens


def target_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> torch.Tensor:
    """(M, T, V) logits and (M, T) targets -> (M, T) logprobs of the tempered policy."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def token_entropy(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """(M, T, V) -> (M, T) entropy of the tempered policy, for the rollout/entropy metric."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return -(logp.exp() * logp).sum(-1)
