"""One GRPO update: pack responses into micro-batches and run the weighted objective through DeepSpeed.

Weights and advantages are aligned with the prediction targets after the next-token shift: the
logit at position ``len(prompt) + t - 1`` predicts response token ``t`` (paper B.4). Prompt and
padding positions are excluded. Each micro-batch's summed token terms are scaled by
``world_size / n_step_tokens`` (see ``objective.step_loss_scale``) and back-propagated without
DeepSpeed's accumulation scaling, so the step gradient is the mean over the step's response tokens
whatever the micro-batch size or number of ranks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from training.objective import step_loss_scale, target_logprobs, token_entropy, token_loss


class NonFiniteLossError(RuntimeError):
    """The loss became NaN/inf: the step is abandoned and no checkpoint is written."""


@dataclass
class PackedResponse:
    prompt_ids: list[int]
    response_ids: list[int]
    old_logprobs: list[float]
    weights: list[float]  # final w_{i,t} per response token
    token_adv: list[float]  # A_i times the sign multiplier per response token
    include: bool  # enters the objective (rewarded, in an informative group)


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # (M, L)
    attention_mask: torch.Tensor  # (M, L)
    targets: torch.Tensor  # (M, L-1) input_ids shifted left
    mask: torch.Tensor  # (M, L-1) bool: response tokens that enter the objective
    old_logp: torch.Tensor  # (M, L-1)
    token_adv: torch.Tensor  # (M, L-1)
    weights: torch.Tensor  # (M, L-1)


def pack(items: list[PackedResponse], pad_id: int) -> MicroBatch:
    """Right-padded tensors with per-target alignment (pure)."""
    width = max(len(r.prompt_ids) + len(r.response_ids) for r in items)
    m = len(items)
    ids = torch.full((m, width), pad_id, dtype=torch.long)
    attn = torch.zeros((m, width), dtype=torch.long)
    shape = (m, width - 1)
    mask = torch.zeros(shape, dtype=torch.bool)
    old, adv, w = torch.zeros(shape), torch.zeros(shape), torch.zeros(shape)
    for i, r in enumerate(items):
        seq = r.prompt_ids + r.response_ids
        ids[i, :len(seq)], attn[i, :len(seq)] = torch.tensor(seq), 1
        start, n = len(r.prompt_ids) - 1, len(r.response_ids)  # target index of response token 0
        if r.include and n:
            mask[i, start:start + n] = True
            old[i, start:start + n] = torch.tensor(r.old_logprobs, dtype=torch.float32)
            adv[i, start:start + n] = torch.tensor(r.token_adv, dtype=torch.float32)
            w[i, start:start + n] = torch.tensor(r.weights, dtype=torch.float32)
    return MicroBatch(ids, attn, ids[:, 1:].clone(), mask, old, adv, w)


def make_micro_batches(items: list[PackedResponse], micro_batch_size: int, pad_id: int) -> list[MicroBatch]:
    if len(items) % micro_batch_size:
        raise ValueError(f"{len(items)} responses do not split into micro-batches of {micro_batch_size}")
    return [pack(items[k:k + micro_batch_size], pad_id) for k in range(0, len(items), micro_batch_size)]


@dataclass
class UpdateStats:
    sums: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.sums[key] = self.sums.get(key, 0.0) + float(value)


def _all_reduce_flag(bad: bool, device: torch.device) -> bool:
    import torch.distributed as dist

    t = torch.tensor([1.0 if bad else 0.0], device=device)
    if dist.is_initialized():
        dist.all_reduce(t)
    return bool(t.item() > 0)


def run_update(engine: Any, micro_batches: list[MicroBatch], n_step_tokens: int, world_size: int, *,
               temperature: float, eps_low: float, eps_high: float, kl_coef: float = 0.0,
               ref_model: torch.nn.Module | None = None, step: int = 0) -> UpdateStats:
    """Forward/backward every micro-batch, then the optimiser step at the accumulation boundary."""
    scale = step_loss_scale(n_step_tokens, world_size)
    if len(micro_batches) != engine.gradient_accumulation_steps():
        raise ValueError(f"{len(micro_batches)} micro-batches but DeepSpeed accumulates "
                         f"{engine.gradient_accumulation_steps()}; build the engine with the same config")
    device = engine.device
    stats = UpdateStats()
    for k, mb in enumerate(micro_batches):
        mb_t = {name: getattr(mb, name).to(device) for name in ("input_ids", "attention_mask", "targets", "mask",
                                                                 "old_logp", "token_adv", "weights")}
        logits = engine(input_ids=mb_t["input_ids"], attention_mask=mb_t["attention_mask"], use_cache=False).logits[:, :-1]
        logp = target_logprobs(logits, mb_t["targets"], temperature)
        ref_logp = None
        if ref_model is not None and kl_coef > 0:
            with torch.no_grad():
                ref_logits = ref_model(input_ids=mb_t["input_ids"], attention_mask=mb_t["attention_mask"],
                                       use_cache=False).logits[:, :-1]
                ref_logp = target_logprobs(ref_logits, mb_t["targets"], temperature)
        per_token, ts = token_loss(logp, mb_t["old_logp"], mb_t["token_adv"], mb_t["weights"], mb_t["mask"],
                                   eps_low, eps_high, ref_logp, kl_coef)
        loss = per_token.sum() * scale
        if _all_reduce_flag(not bool(torch.isfinite(loss)), device):
            raise NonFiniteLossError(
                f"loss is {loss.item()} at step {step + 1}, micro-batch {k}: the step was stopped and no checkpoint "
                "was written; lower optim.lr, check the rewards and logprobs, then resume from the last checkpoint "
                "with --resume")
        engine.backward(loss, scale_wrt_gas=False)
        engine.step()
        with torch.no_grad():
            mask = mb_t["mask"]
            stats.add("loss_sum", float(per_token.sum()))
            stats.add("tokens", float(mask.sum()))
            stats.add("clipped", float(ts.clipped.sum()))
            stats.add("kl_sum", float(ts.kl.sum()))
            stats.add("ratio_sum", float((ts.ratio * mask).sum()))
            ratio_max = float(ts.ratio[mask].max()) if bool(mask.any()) else 0.0
            stats.sums["ratio_max"] = max(stats.sums.get("ratio_max", 0.0), ratio_max)
            stats.add("entropy_sum", float((token_entropy(logits.detach(), temperature) * mask).sum()))
    norm = engine.get_global_grad_norm()
    if norm is not None:
        stats.add("grad_norm", float(norm))
    return stats
