"""The weighted GRPO objective against tensors computed by hand (paper 3.5, B.4, G.3); no DeepSpeed."""
from __future__ import annotations

import math

import pytest
import torch

from tasks.attribution.weights import CONTEXT, DIRECT, OTHER
from training.config import demo_config, validate_configs
from training.objective import group_advantages, policy_weights, step_loss_scale, target_logprobs, token_loss
from training.update import PackedResponse, pack


def test_group_advantages_drop_missing_and_count_degenerate_groups():
    # group 0: rewards 1, 0, missing, 0.5 -> mean 0.5, sample std 0.5
    # group 1: one reward only -> contributes nothing; group 2: zero variance -> contributes nothing
    rewards = [1.0, 0.0, None, 0.5, 0.7, None, 0.3, 0.3]
    groups = [0, 0, 0, 0, 1, 1, 2, 2]
    res = group_advantages(rewards, groups, eps=1e-6)
    a = 0.5 / (0.5 + 1e-6)
    assert res.advantages[:4] == pytest.approx([a, -a, 0.0, 0.0], abs=1e-12)
    assert res.advantages[4:] == [0.0, 0.0, 0.0, 0.0]
    assert res.retained == [True, True, False, True, True, False, True, True]
    assert res.informative == [True, True, False, True, False, False, False, False]
    assert (res.n_groups, res.n_degenerate_groups, res.n_dropped) == (3, 2, 2)


def test_group_advantages_rejects_nan_reward_with_fix():
    with pytest.raises(ValueError, match="return None for a missing reward"):
        group_advantages([1.0, float("nan")], [0, 0])


def test_sign_rule_full_mode():
    markers = torch.tensor([DIRECT, CONTEXT, OTHER, OTHER])
    w, s = policy_weights(markers, -0.7, "full")
    assert w.tolist() == [3.0, 1.5, 1.0, 1.0] and s.tolist() == [1, 1, 1, 1]
    w, s = policy_weights(markers, 0.7, "full")  # attributed keep 1.0, others 1.2
    assert w.tolist() == pytest.approx([1.0, 1.0, 1.2, 1.2]) and s.tolist() == [1, 1, 1, 1]
    w, _ = policy_weights(markers, 0.7, "full", uniform=True)  # findings present, none localised
    assert w.tolist() == [1.0] * 4


def test_binary_and_hierarchical_use_uniform_weights():
    markers = torch.tensor([DIRECT, CONTEXT, OTHER])
    for mode in ("binary", "hierarchical"):
        for adv in (-1.0, 1.0):
            w, s = policy_weights(markers, adv, mode)
            assert w.tolist() == [1.0] * 3 and s.tolist() == [1.0] * 3


def test_unconditional_penalises_diagnosed_tokens_whatever_the_sign():
    markers = torch.tensor([DIRECT, CONTEXT, OTHER])
    w, s = policy_weights(markers, 0.5, "unconditional")
    assert w.tolist() == [3.0, 1.5, 1.0] and s.tolist() == [-1.0, -1.0, 1.0]
    w, s = policy_weights(markers, -0.5, "unconditional")
    assert w.tolist() == [3.0, 1.5, 1.0] and s.tolist() == [1.0, 1.0, 1.0]


def test_token_loss_matches_hand_computation():
    ratio = torch.tensor([[1.5, 0.5, 1.0, 0.6]])
    old = torch.tensor([[-1.0, -2.0, -0.5, -1.2]])
    logp = old + torch.log(ratio)
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    w = torch.tensor([[2.0, 1.0, 3.0, 1.0]])
    mask = torch.tensor([[True, True, True, False]])
    per_token, st = token_loss(logp, old, adv, w, mask, eps_low=0.2, eps_high=0.28)
    # t0: min(1.5, 1.28) = 1.28 (clipped) * w 2 -> -2.56; t1: min(0.5, 0.8) = 0.5 -> -0.5;
    # t2: min(-1, -1) = -1 * w 3 -> +3; t3 masked out.
    assert per_token.tolist()[0] == pytest.approx([-2.56, -0.5, 3.0, 0.0], abs=1e-6)
    assert st.clipped.tolist() == [[True, False, False, False]]


def test_k3_kl_is_added_unweighted():
    logp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -1.0]])
    zero = torch.zeros_like(logp)
    per_token, st = token_loss(logp, logp, zero, torch.tensor([[3.0, 1.5]]), torch.ones_like(logp, dtype=torch.bool),
                               0.2, 0.2, ref_logp=ref, kl_coef=0.1)
    k3 = [math.exp(-0.5) + 0.5 - 1, math.exp(1.0) - 1.0 - 1]
    assert st.kl.tolist()[0] == pytest.approx(k3, abs=1e-6)
    assert per_token.tolist()[0] == pytest.approx([0.1 * k for k in k3], abs=1e-6)


def test_normaliser_is_token_count_not_weight_sum():
    """Scaling every weight by 1.2 scales the gradient by 1.2: the 1.2 is not cancelled."""
    logits = torch.randn(1, 5, 11, generator=torch.Generator().manual_seed(0), requires_grad=True)
    targets = torch.tensor([[1, 2, 3, 4, 5]])
    old = target_logprobs(logits.detach(), targets, 1.0)
    mask = torch.ones(1, 5, dtype=torch.bool)
    adv = torch.full((1, 5), 0.8)
    grads = []
    for scale in (1.0, 1.2):
        logits.grad = None
        per_token, _ = token_loss(target_logprobs(logits, targets, 1.0), old, adv, torch.full((1, 5), scale), mask, 0.2, 0.2)
        (per_token.sum() * step_loss_scale(5, 1)).backward()
        grads.append(logits.grad.clone())
    assert torch.allclose(grads[1], 1.2 * grads[0], atol=1e-7)
    with pytest.raises(ValueError, match="skip the update"):
        step_loss_scale(0, 1)


def test_pack_aligns_weights_with_next_token_targets():
    r = PackedResponse(prompt_ids=[5, 6, 7], response_ids=[8, 9], old_logprobs=[-0.1, -0.2], weights=[3.0, 1.5],
                       token_adv=[-0.5, -0.5], include=True)
    skipped = PackedResponse([5], [4], [-0.3], [1.0], [0.0], include=False)
    mb = pack([r, skipped], pad_id=0)
    assert mb.input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 4, 0, 0, 0]]
    assert mb.targets.tolist()[0] == [6, 7, 8, 9]
    assert mb.mask.tolist() == [[False, False, True, True], [False, False, False, False]]
    assert mb.weights.tolist()[0] == [0.0, 0.0, 3.0, 1.5]
    assert mb.old_logp.tolist()[0] == pytest.approx([0.0, 0.0, -0.1, -0.2])
    assert mb.token_adv.tolist()[0] == [0.0, 0.0, -0.5, -0.5]


def test_validate_configs_names_the_fix():
    cfg = demo_config()
    validate_configs(cfg, 1)
    with pytest.raises(ValueError, match="multiple of 4"):
        validate_configs(demo_config(rollout={"queries_per_step": 2}), 4)
    with pytest.raises(ValueError, match="micro_batch_size that divides 8"):
        validate_configs(demo_config(deepspeed={"micro_batch_size": 3}), 1)


def test_prompt_uses_shared_generation_prompt_and_opens_with_empty_think():
    from tasks.llm.prompts import load_prompt
    from training.rollout import build_prompt
    from training.tiny import build_tokenizer

    tok = build_tokenizer()
    text = build_prompt(tok, "Build a counter app.")
    system, _ = load_prompt("generation").render({"query": "x"})
    assert text.startswith(f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\nBuild a counter app.<|im_end|>\n")
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert "<|im_start|>system\nShort.<|im_end|>" in build_prompt(tok, "q", instruction="Short.")
