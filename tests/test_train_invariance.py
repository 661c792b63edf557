"""The step gradient does not depend on how the step is split: micro-batch size, and 1 vs 2 processes.

With SGD at lr=1 (no clipping) the parameter change of one DeepSpeed step IS minus the gradient, so
each split is compared against a plain autograd pass over the whole batch (mean over the step's
response tokens). The 2-process run uses torchrun with gloo; this file doubles as its worker script.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from training.config import demo_config  # noqa: E402
from training.objective import target_logprobs, token_loss  # noqa: E402
from training.update import PackedResponse, make_micro_batches, pack, run_update  # noqa: E402

N_RESP, GROUP = 8, 4


def make_batch(model_dir: str) -> list[PackedResponse]:
    """8 responses (2 groups) of different lengths; old logprobs perturbed so some ratios clip."""
    from transformers import AutoModelForCausalLM

    g = torch.Generator().manual_seed(3)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    items = []
    for i in range(N_RESP):
        prompt = torch.randint(5, 500, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
        resp = torch.randint(5, 500, (int(torch.randint(2, 12, (1,), generator=g)),), generator=g).tolist()
        with torch.no_grad():
            ids = torch.tensor([prompt + resp])
            lp = target_logprobs(model(input_ids=ids).logits[:, :-1], ids[:, 1:], 1.0)[0, len(prompt) - 1:]
        old = (lp + 0.3 * torch.randn(lp.shape, generator=g)).tolist()
        adv = float(torch.randn(1, generator=g))
        weights = [float(x) for x in torch.tensor([1.0, 1.5, 3.0, 1.2])[torch.randint(0, 4, (len(resp),), generator=g)]]
        items.append(PackedResponse(prompt, resp, old, weights, [adv] * len(resp), include=(i != 5)))
    return items


def reference_grads(model_dir: str, items: list[PackedResponse]) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    mb = pack(items, pad_id=0)
    logits = model(input_ids=mb.input_ids, attention_mask=mb.attention_mask, use_cache=False).logits[:, :-1]
    per_token, _ = token_loss(target_logprobs(logits, mb.targets, 1.0), mb.old_logp, mb.token_adv, mb.weights, mb.mask,
                              0.2, 0.28)
    (per_token.sum() / mb.mask.sum()).backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def deepspeed_delta(model_dir: str, items: list[PackedResponse], micro_batch: int, world: int, rank: int
                    ) -> dict[str, torch.Tensor]:
    """-(change of each parameter) after one SGD(lr=1) DeepSpeed step = the step gradient."""
    import torch.distributed as dist

    from training.engine import build_engine, init_distributed, load_policy

    init_distributed("gloo")
    cfg = demo_config(rollout={"queries_per_step": 2, "group_size": GROUP},
                      deepspeed={"micro_batch_size": micro_batch, "zero_stage": 1},
                      optim={"optimizer": "sgd", "lr": 1.0, "grad_clip": 0.0})
    model, _ = load_policy(model_dir, "fp32", torch.device("cpu"))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    engine = build_engine(cfg, model, world)
    per_rank = N_RESP // world
    mine = items[rank * per_rank:(rank + 1) * per_rank]  # whole groups per rank
    n_tokens = torch.tensor([float(sum(len(r.response_ids) for r in mine if r.include))])
    dist.all_reduce(n_tokens)
    run_update(engine, make_micro_batches(mine, micro_batch, 0), int(n_tokens.item()), world,
               temperature=1.0, eps_low=0.2, eps_high=0.28)
    return {n: before[n] - p.detach() for n, p in engine.module.named_parameters()}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> str:
    from training.tiny import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny")))


def _assert_close(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    assert set(got) == set(want)
    for n in want:
        assert torch.allclose(got[n], want[n], rtol=1e-4, atol=1e-6), f"{n}: max diff {(got[n] - want[n]).abs().max()}"
    assert any(want[n].abs().sum() > 0 for n in want)


def test_step_gradient_invariant_to_micro_batch_size(tiny_dir):
    items = make_batch(tiny_dir)
    want = reference_grads(tiny_dir, items)
    for micro in (8, 4, 2):
        _assert_close(deepspeed_delta(tiny_dir, items, micro, 1, 0), want)


def test_step_gradient_same_with_two_processes(tiny_dir, tmp_path):
    items = make_batch(tiny_dir)
    want = reference_grads(tiny_dir, items)
    out = tmp_path / "delta.pt"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO),
               TORCH_EXTENSIONS_DIR=str(REPO / ".torch_extensions"))
    from training.engine import _free_port

    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(_free_port()),
           __file__, tiny_dir, str(out)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    _assert_close(torch.load(out), want)


def _worker(model_dir: str, out: str) -> None:
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    delta = deepspeed_delta(model_dir, make_batch(model_dir), 2, int(os.environ["WORLD_SIZE"]), rank)
    if rank == 0:
        torch.save(delta, out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    _worker(sys.argv[1], sys.argv[2])
