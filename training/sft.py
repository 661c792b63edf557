"""The SFT job (paper D.1: teacher answers to synthesised queries initialise RL), sharing the GRPO
job's model loading, DeepSpeed engine, checkpoints (bit-for-bit resume on CPU) and metrics.

Each example is serialised exactly like a policy prompt (instruction + expanded query, assistant turn
opened by an empty ``<think></think>``, paper F.3) followed by the teacher answer and the end-of-turn
token; the loss is the cross-entropy of the answer tokens only, divided by the count of answer
tokens in the whole step (all micro-batches and ranks), like the GRPO objective, so the split of a
step does not change the update.

Run: ``python -m training.sft [--profile demo] [--set train_sft.run.answers_path=...] [--resume]``; from Python
``run_sft(config, examples=None) -> summary``.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from schemas.config import load_config, write_config
from schemas.config.train import TrainSFTConfig
from schemas.layout import FINAL_MODEL, RUN_CHECKPOINTS, RUN_CONFIG, runs_dir
from training import checkpoint
from training.config import out_dir_of
from training.data import QuerySource
from training.engine import build_engine_for, device_for_rank, init_distributed, load_policy
from training.metrics import MetricWriter, write_step_record
from training.rollout import build_prompt, encode_prompts
from training.toy import TOY_QUERIES
from training.update import NonFiniteLossError, PackedResponse, _all_reduce_flag, make_micro_batches

log = logging.getLogger("rubricrl.sft")
TOY_ANSWER = "```html\n<!DOCTYPE html>\n<html><body><button id=\"inc\">+1</button><span id=\"count\">0</span>\n" \
             "<script>let count = 0;</script></body></html>\n```"


def sft_demo_config(**overrides: Any) -> TrainSFTConfig:
    """The demo profile's ``train_sft`` section with nested ``overrides`` on top (no environment overrides)."""
    return load_config("demo", overrides={"train_sft": overrides}, environ={}).train_sft


def load_examples(path: str | None) -> list[dict[str, str]]:
    if path is None:
        return [{"query_id": q["query_id"], "query": q["query"], "answer": TOY_ANSWER} for q in TOY_QUERIES]
    p = Path(path)
    if not p.exists():
        raise ValueError(f"run.answers_path={path!r} does not exist; point it at the sft_answers stage or a JSONL file")
    if p.suffix == ".jsonl":
        rows = [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(p).to_pylist()
    good = [r for r in rows if r.get("query") and r.get("answer")]
    if not good:
        raise ValueError(f"{path}: no row has both a non-empty query and answer; the sft_answers stage must carry them")
    return [{"query_id": str(r.get("query_id", i)), "query": str(r["query"]), "answer": str(r["answer"])}
            for i, r in enumerate(good)]


def validate_sft(cfg: TrainSFTConfig, world_size: int, n_examples: int) -> int:
    """Checks; returns the number of steps."""
    per_rank, rem = divmod(cfg.run.examples_per_step, world_size)
    if rem or per_rank % cfg.deepspeed.micro_batch_size:
        raise ValueError(f"run.examples_per_step={cfg.run.examples_per_step} must split into {world_size} rank(s) x "
                         f"micro-batches of deepspeed.micro_batch_size={cfg.deepspeed.micro_batch_size}")
    if n_examples < cfg.run.examples_per_step:
        raise ValueError(f"{n_examples} examples but run.examples_per_step={cfg.run.examples_per_step}; lower it")
    return cfg.run.epochs * (n_examples // cfg.run.examples_per_step)


def encode_example(tokenizer: Any, ex: dict[str, str], instruction: str | None, max_len: int) -> tuple[PackedResponse, bool]:
    (prompt,), _ = encode_prompts(tokenizer, [build_prompt(tokenizer, ex["query"], instruction)], max_len // 2)
    answer = tokenizer(ex["answer"] + tokenizer.eos_token, add_special_tokens=False).input_ids
    cut = len(prompt) + len(answer) > max_len
    answer = answer[:max_len - len(prompt)]
    n = len(answer)
    return PackedResponse(prompt, answer, [0.0] * n, [1.0] * n, [1.0] * n, include=True), cut


def sft_update(engine: Any, mbs: list, n_step_tokens: int, world: int, step: int) -> float:
    """Answer-token cross-entropy; returns the summed loss over this rank's tokens."""
    total, device = 0.0, engine.device
    for k, mb in enumerate(mbs):
        ids, attn = mb.input_ids.to(device), mb.attention_mask.to(device)
        logits = engine(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1]
        logp = torch.log_softmax(logits.float(), -1).gather(-1, mb.targets.to(device).unsqueeze(-1)).squeeze(-1)
        nll = -(logp * mb.mask.to(device)).sum()
        loss = nll * (world / n_step_tokens)
        if _all_reduce_flag(not bool(torch.isfinite(loss)), device):
            raise NonFiniteLossError(f"SFT loss is {loss.item()} at step {step + 1}, micro-batch {k}: stopped, no "
                                     "checkpoint written; lower optim.lr and resume with --resume")
        engine.backward(loss, scale_wrt_gas=False)
        engine.step()
        total += float(nll.detach())
    return total


def run_sft(cfg: TrainSFTConfig, examples: list[dict[str, str]] | None = None) -> dict[str, Any]:
    import torch.distributed as dist

    from training.grpo import named_weights, prepare_model_dir

    rank, world = init_distributed(cfg.deepspeed.dist_backend)
    examples = examples if examples is not None else load_examples(cfg.run.answers_path)
    steps = validate_sft(cfg, world, len(examples))
    torch.manual_seed(cfg.run.seed)
    out = out_dir_of(cfg.run)
    # a tiny model's tokenizer learns the texts it is trained on (training.tiny): the teacher's HTML in few tokens
    corpus = [f"{ex['query']}\n{ex['answer']}" for ex in examples]
    model_dir = prepare_model_dir(cfg, rank, corpus)  # type: ignore[arg-type]  (reads model.* and run.out_dir/seed)
    model, tok = load_policy(model_dir, cfg.deepspeed.precision, device_for_rank(), cfg.model.gradient_checkpointing)
    per_rank = cfg.run.examples_per_step // world
    engine = build_engine_for(cfg.deepspeed, cfg.optim, model, per_rank // cfg.deepspeed.micro_batch_size)
    ckpt_dir, start = out / RUN_CHECKPOINTS, 0
    if cfg.run.resume:
        state = checkpoint.load_latest(engine, ckpt_dir, rank)
        start = int(state["step"]) if state else 0
    writer = MetricWriter(out / "tensorboard", rank == 0, purge_step=start + 1)
    data, history = QuerySource(examples, cfg.run.seed), []
    try:
        for step in range(start, steps):
            t0 = time.perf_counter()
            enc = [encode_example(tok, ex, cfg.run.instruction, cfg.run.max_seq_len)
                   for ex in data.batch(step, rank, world, cfg.run.examples_per_step)]
            items = [e for e, _ in enc]
            counts = torch.tensor([float(sum(len(i.response_ids) for i in items)), float(sum(c for _, c in enc))])
            if dist.is_initialized():
                dist.all_reduce(counts)
            nll = torch.tensor([sft_update(engine, make_micro_batches(items, cfg.deepspeed.micro_batch_size,
                                                                      tok.pad_token_id), int(counts[0]), world, step)])
            if dist.is_initialized():
                dist.all_reduce(nll)
            m = {"loss/sft": float(nll[0] / counts[0]), "loss/tokens": float(counts[0]),
                 "rollout/examples_cut": float(counts[1]), "time/step_s": time.perf_counter() - t0}
            history.append(m)
            if rank == 0:
                writer.write(step + 1, m)
                write_step_record(out, step + 1, m)
            if (step + 1) % cfg.run.save_every == 0 or step + 1 == steps:
                checkpoint.save(engine, ckpt_dir, step + 1, {"step": step + 1}, rank, cfg.run.keep_checkpoints)
    finally:
        writer.close()
    if steps > start:
        state_dict = dict(named_weights(engine))
        if rank == 0:
            engine.module.save_pretrained(out / FINAL_MODEL, state_dict=state_dict, safe_serialization=True)
            tok.save_pretrained(out / FINAL_MODEL)
    return {"steps_run": len(history), "start_step": start, "end_step": steps, "out_dir": str(out),
            "final_model": str(out / FINAL_MODEL), "tensorboard": str(out / "tensorboard"), "history": history}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.sft", description="SFT job (teacher answers)")
    ap.add_argument("--config", help="a whole resolved configuration (a train-sft run folder's config.json)")
    ap.add_argument("--profile", choices=["demo", "full"], default=None)
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                    help="a path in the whole configuration, e.g. train_sft.run.epochs=2")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--local_rank", "--local-rank", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        whole = load_config(args.profile, sets=args.set, file=args.config)
        cfg = whole.train_sft
        cfg.run.resume = cfg.run.resume or args.resume
        if cfg.run.out_dir is None:
            cfg.run.out_dir = runs_dir(whole.data_dir, "sft") / "job"
        if not args.config and int(os.environ.get("RANK", "0")) == 0:
            write_config(whole, cfg.run.out_dir / RUN_CONFIG)
        summary = run_sft(cfg)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
