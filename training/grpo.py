"""The GRPO step loop (paper 3.5, 4.3, 4.4, D.4): sample B x G -> score -> advantages -> weighted update.

Each rank owns ``B / world_size`` whole groups. Per step it samples G responses per query with the
rollout engine, calls the caller's ``score_fn`` (the train-rl flow supplies the environment's
hierarchical rewards and the attribution's token membership; tests supply a toy reward), computes
group-relative advantages, applies the mode's weight rule (``tasks.attribution.weights``, numbers from
the ``attribution`` config section), and runs one optimiser step. vLLM gets
the new weights after every step. Checkpoints every ``save_every`` steps; ``resume`` continues
bit-for-bit on CPU (sampling is seeded by (seed, step, rank), so it does not depend on history).

score_fn contract::

    score_fn(prompts, responses, token_ids, **ctx) -> (rewards, membership, info)

prompts: the expanded queries; responses: decoded response texts; token_ids: generated ids (the
stop token included when produced); ctx: ``query_ids``, ``group_ids``, ``step``, ``rank``,
``model_path``, ``out_dir`` (the run folder; the train-rl flow's scorer reads the run's config there); when
streamed, also ``part``, ``offset`` and, with a score timeout, ``deadline`` (see ``training/stream.py``).
rewards[i]: float, or None for a missing reward (the response is dropped).
membership[i]: one membership code per token id (ints: ``tasks.attribution.weights`` OTHER,
CONTEXT, DIRECT); the trainer turns them into weights, since it computes the advantages. info (all optional,
lists aligned with responses): ``passed`` (all rubric items met; binary mode's reward),
``tier`` (hierarchy level reached), ``judge_failed``, ``uniform`` (findings present, none
localised: uniform 1.0), and the floats ``time_score_s`` / ``time_attribute_s``.

Run: see ``training/launch.py``; from Python, ``run_grpo(config, score_fn, attribution=...)``.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from schemas.config.attribution import AttributionConfig
from schemas.config.env import EnvConfig
from schemas.config.train import TrainRLConfig
from schemas.layout import FINAL_MODEL, RUN_CHECKPOINTS, RUN_RECORDS
from training import checkpoint
from training.config import out_dir_of, validate_configs
from training.data import QuerySource, load_queries
from training.engine import build_engine, device_for_rank, init_distributed, load_policy
from training.metrics import (MetricWriter, gather_sums, local_sums, step_metrics, write_rollout_records,
                              write_step_record)
from training.objective import group_advantages, policy_weights
from training.rollout import Rollout, TransformersEngine, VLLMEngine, build_prompt, encode_prompts
from training.stream import (ScoreFn, Scored, ScoreStream, reorder, resolve_score_fn, score_rollouts, stream_timing,
                             stream_workers)
from training.update import PackedResponse, make_micro_batches, run_update

log = logging.getLogger("rubricrl.train")


def step_seed(seed: int, step: int, rank: int) -> int:
    return (seed * 1_000_003 + step * 10_007 + rank * 101) % (2**31 - 1)


def effective_rewards(cfg: TrainRLConfig, scored: Scored) -> list[float | None]:
    """binary mode: 1 when every rubric item is met, else 0 (paper 4.3); other modes: the given reward."""
    if cfg.objective.mode != "binary":
        return scored.rewards
    passed = scored.info.get("passed")
    if passed is None:
        raise ValueError("objective.mode='binary' needs info['passed'] (all rubric items met) from score_fn")
    return [None if r is None else float(bool(p)) for r, p in zip(scored.rewards, passed)]


def build_packed(cfg: TrainRLConfig, rollouts: list[Rollout], scored: Scored, rewards: list[float | None],
                 group_ids: list[int], attribution: AttributionConfig) -> tuple[list[PackedResponse], Any]:
    adv = group_advantages(rewards, group_ids, cfg.objective.adv_eps)
    uniform = scored.info.get("uniform") or [False] * len(rollouts)
    packed = []
    for i, r in enumerate(rollouts):
        weights, sign = policy_weights(scored.membership[i], adv.advantages[i], cfg.objective.mode, bool(uniform[i]),
                                       attribution)
        packed.append(PackedResponse(r.prompt_ids, r.response_ids, r.logprobs, weights.tolist(),
                                     (sign * adv.advantages[i]).tolist(), adv.informative[i]))
    return packed, adv


def prepare_model_dir(cfg: TrainRLConfig, rank: int, corpus: list[str] | None = None) -> Path:
    """The policy directory: ``model.path``, or the tiny random model built once under out_dir (rank 0),
    its tokenizer also trained on ``corpus``."""
    import torch.distributed as dist

    if cfg.model.path is not None:
        return Path(cfg.model.path)
    path = out_dir_of(cfg.run) / "tiny_model"
    if rank == 0 and not (path / "config.json").exists():
        from training.tiny import build_tiny_model

        build_tiny_model(path, vocab_size=cfg.model.tiny_vocab_size, hidden_size=cfg.model.tiny_hidden_size,
                         num_layers=cfg.model.tiny_layers, seed=cfg.run.seed, corpus=corpus)
    if dist.is_initialized():
        dist.barrier()
    return path


def make_rollout_engine(cfg: TrainRLConfig, model: torch.nn.Module, tokenizer: Any, model_dir: Path):
    ro = cfg.rollout
    if ro.engine == "vllm":
        dtype = "bfloat16" if cfg.deepspeed.precision == "bf16" else "float32"
        return VLLMEngine(model_dir, ro.max_new_tokens, ro.temperature, ro.max_prompt_tokens + ro.max_new_tokens,
                          dtype=dtype, gpu_memory_utilization=ro.vllm_gpu_memory_utilization,
                          cpu_kvcache_gb=ro.vllm_cpu_kvcache_gb, seed=cfg.run.seed)
    return TransformersEngine(model, tokenizer, ro.max_new_tokens, ro.temperature)


def named_weights(engine: Any):
    """The trainer's full weights in checkpoint naming (gathered under ZeRO-3), for ``reload_weights``.

    Every rank must call this together under ZeRO-3 (the gather is collective).
    """
    if engine.zero_optimization_stage() == 3:
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(engine.module.parameters()), modifier_rank=None):
            state = {k: v.detach().clone() for k, v in engine.module.state_dict().items()}
        yield from state.items()
    else:
        yield from engine.module.state_dict().items()


@dataclass
class StepBatch:
    """One step's rollouts (generated, perhaps a step ahead) and their scores in flight."""

    step: int
    queries: list[dict[str, str]]
    groups: list[list[Rollout]]
    n_cut: int
    first_gid: int  # group id of the first query (group ids are unique across steps and ranks)
    t0: float
    staleness: int  # optimiser steps between the sampling weights and the weights this batch updates
    stream: ScoreStream | None = None
    t_generated: float = 0.0

    @property
    def rollouts(self) -> list[Rollout]:
        return [r for g in self.groups for r in g]

    @property
    def group_ids(self) -> list[int]:
        return [self.first_gid + gi for gi, g in enumerate(self.groups) for _ in g]

    @property
    def flat_queries(self) -> list[dict[str, str]]:
        return [q for q, g in zip(self.queries, self.groups) for _ in g]


class Trainer:
    """Holds the engine, rollout engine and bookkeeping; ``step(s)`` runs one GRPO step."""

    def __init__(self, cfg: TrainRLConfig, score_fn: ScoreFn, queries: list[dict[str, str]] | None = None,
                 attribution: AttributionConfig | None = None, env: EnvConfig | None = None):
        self.cfg, self.score_fn = cfg, score_fn
        self.attribution = attribution or AttributionConfig()
        self.env = env or EnvConfig()  # the score workers: env.task_runner / env.workers / env.ray_address
        if self.env.task_runner == "ray" and cfg.rollout.stream_scoring:
            if resolve_score_fn(cfg.run.score_fn) is not score_fn:
                raise ValueError(f"env.task_runner='ray' scores with train.run.score_fn={cfg.run.score_fn!r} (Ray "
                                 "workers import it by path), not the score_fn passed in; make them the same")
        # off-policy: the next step's batch, generated a step ahead (never checkpointed: see docs/training.md)
        self.pending: StepBatch | None = None
        self.staleness_now = 0
        self.rank, self.world = init_distributed(cfg.deepspeed.dist_backend)
        validate_configs(cfg, self.world)
        torch.manual_seed(cfg.run.seed)
        self.out = out_dir_of(cfg.run)
        self.model_dir = prepare_model_dir(cfg, self.rank)
        device = device_for_rank()
        model, self.tokenizer = load_policy(self.model_dir, cfg.deepspeed.precision, device,
                                            cfg.model.gradient_checkpointing)
        self.ref_model = None
        if cfg.objective.kl_coef > 0:
            import copy

            self.ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        self.engine = build_engine(cfg, model, self.world)
        self.rollout = make_rollout_engine(cfg, self.engine.module, self.tokenizer, self.model_dir)
        self.data = QuerySource(queries if queries is not None else load_queries(cfg.run.queries_path), cfg.run.seed)
        self.ckpt_dir = self.out / RUN_CHECKPOINTS
        self.start_step = 0
        if cfg.run.resume:
            state = checkpoint.load_latest(self.engine, self.ckpt_dir, self.rank)
            self.start_step = int(state["step"]) if state else 0
        if self.rollout.name == "vllm":
            self.rollout.sync_weights(named_weights(self.engine))
        self.writer = MetricWriter(self.out / "tensorboard", self.rank == 0, purge_step=self.start_step + 1)
        if self.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            log.info("train-rl config: %s", cfg.model_dump_json())

    def generate(self, step: int) -> StepBatch:
        """Step ``step``'s rollouts; when streaming, each group goes to a ScoreStream as it finishes."""
        cfg, t0 = self.cfg, time.perf_counter()
        g = cfg.rollout.group_size
        queries = self.data.batch(step, self.rank, self.world, cfg.rollout.queries_per_step)
        prompts = [build_prompt(self.tokenizer, q["query"], cfg.rollout.instruction) for q in queries]
        prompt_ids, n_cut = encode_prompts(self.tokenizer, prompts, cfg.rollout.max_prompt_tokens)
        first_gid = step * cfg.rollout.queries_per_step + self.rank * len(queries)
        batch = StepBatch(step, queries, [[] for _ in queries], n_cut, first_gid, t0, self.staleness_now)
        seed = step_seed(cfg.run.seed, step, self.rank)
        if not cfg.rollout.stream_scoring:
            batch.groups = self.rollout.generate(prompt_ids, g, seed)
            batch.t_generated = time.perf_counter()
            return batch
        env = self.env
        workers = stream_workers(env.task_runner, env.workers, len(queries))
        batch.stream = ScoreStream(self.score_fn, self.tokenizer, self.score_ctx(step), workers=workers,
                                   runner=env.task_runner, ray_address=env.ray_address,
                                   timeout_s=cfg.rollout.score_timeout_s, score_fn_path=cfg.run.score_fn)
        for i, group in self.rollout.generate_stream(prompt_ids, g, seed):
            batch.groups[i] = group
            batch.stream.submit([queries[i]] * len(group), group, [first_gid + i] * len(group), part=i, offset=i * g)
        batch.stream.generation_done()
        batch.t_generated = time.perf_counter()
        return batch

    def score_ctx(self, step: int) -> dict[str, Any]:
        return {"step": step + 1, "rank": self.rank, "model_path": str(self.model_dir), "out_dir": str(self.out)}

    def scores(self, batch: StepBatch) -> tuple[Scored, dict[str, float]]:
        """The batch's scores in prompt order (waiting for the stream), and the generation/scoring timing."""
        if batch.stream is not None:
            scored, timing = batch.stream.finish()
            return reorder(scored, batch.stream.offsets()), timing
        t_gen = batch.t_generated
        scored = score_rollouts(self.score_fn, batch.flat_queries, batch.rollouts, batch.group_ids, self.tokenizer,
                                self.score_ctx(batch.step))
        timing = stream_timing(batch.t0, t_gen, t_gen, time.perf_counter())
        timing["score_busy_s"], timing["attribute_s"] = scored.time_score_s, scored.time_attribute_s
        return scored, timing

    def step(self, step: int) -> dict[str, float]:
        cfg, t_step = self.cfg, time.perf_counter()
        batch = self.pending if self.pending is not None and self.pending.step == step else self.generate(step)
        self.pending = None
        if cfg.rollout.off_policy and step + 1 < cfg.run.steps:
            # generated now, with the weights this batch was sampled with, while its scores come in; the
            # update below makes it one step stale (see docs/training.md, "One-step-off-policy rollouts")
            self.staleness_now = 1
            self.pending = self.generate(step + 1)
            self.staleness_now = 0
        scored, timing = self.scores(batch)
        t_score = time.perf_counter()
        rollouts, group_ids = batch.rollouts, batch.group_ids
        rewards = effective_rewards(cfg, scored)
        packed, adv = build_packed(cfg, rollouts, scored, rewards, group_ids, self.attribution)
        sums = local_sums(rollouts, scored, rewards, adv, packed)
        sums["prompts_cut"] = batch.n_cut
        sums["step_tokens"] = sum(len(p.response_ids) for p in packed if p.include)
        sums = gather_sums(sums)
        upd: dict[str, float] = {}
        if sums["step_tokens"] > 0:
            mbs = make_micro_batches(packed, cfg.deepspeed.micro_batch_size, self.tokenizer.pad_token_id)
            stats = run_update(self.engine, mbs, int(sums["step_tokens"]), self.world,
                               temperature=cfg.rollout.temperature, eps_low=cfg.objective.eps_low,
                               eps_high=cfg.objective.eps_high, kl_coef=cfg.objective.kl_coef,
                               ref_model=self.ref_model, step=step).sums
            grad_norm, ratio_max = stats.pop("grad_norm", None), stats.pop("ratio_max", None)
            upd = gather_sums(stats)
            if grad_norm is not None:
                upd["grad_norm"] = grad_norm
            if ratio_max is not None:  # a max does not sum over ranks: this rank's
                upd["ratio_max"] = ratio_max
            if self.rollout.name == "vllm":
                self.rollout.sync_weights(named_weights(self.engine))
        t_upd = time.perf_counter()
        times = {**timing, "update_s": t_upd - t_score, "step_s": t_upd - t_step}
        metrics = step_metrics(sums, upd, times)
        metrics["rollout/prompts_cut"] = sums["prompts_cut"]
        metrics["rollout/staleness"] = float(batch.staleness)
        metrics["loss/update_skipped"] = float(sums["step_tokens"] == 0)
        self._record(step + 1, batch.queries, batch.groups, rollouts, scored, rewards, adv, packed, group_ids, metrics)
        return metrics

    def _record(self, step: int, queries, groups, rollouts, scored, rewards, adv, packed, group_ids, metrics) -> None:
        passed, tier = scored.info.get("passed"), scored.info.get("tier")
        qids = [q["query_id"] for q, g in zip(queries, groups) for _ in g]
        samples = [k for g in groups for k in range(len(g))]
        rows = [{
            "step": step, "rank": self.rank, "query_id": qids[i], "group_id": group_ids[i], "sample": samples[i],
            "response": self.tokenizer.decode(r.response_ids, skip_special_tokens=True),
            "response_ids": r.response_ids, "logprobs": r.logprobs, "finished": r.finished, "reward": rewards[i],
            "advantage": adv.advantages[i], "informative": adv.informative[i],
            "passed": None if passed is None else bool(passed[i]), "tier": None if tier is None else tier[i],
            "token_weights": packed[i].weights, "mode": self.cfg.objective.mode,
        } for i, r in enumerate(rollouts)]
        write_rollout_records(self.out, step, self.rank, rows)
        if self.rank == 0:
            write_step_record(self.out, step, metrics)
            self.writer.write(step, metrics)

    def save(self, completed_steps: int) -> Path:
        return checkpoint.save(self.engine, self.ckpt_dir, completed_steps, {"step": completed_steps,
                               "data_position": completed_steps * self.cfg.rollout.queries_per_step},
                               self.rank, self.cfg.run.keep_checkpoints)


def run_grpo(config: TrainRLConfig, score_fn: ScoreFn, queries: list[dict[str, str]] | None = None, *,
             attribution: AttributionConfig | None = None, env: EnvConfig | None = None) -> dict[str, Any]:
    """Run (or resume) the GRPO job in this process; returns a summary (rank 0's view).

    ``attribution``: the section whose weights the rule applies (its defaults when None); ``env``: the
    environment section, whose task runner, workers and Ray address run the streamed scoring."""
    tr = Trainer(config, score_fn, queries, attribution, env)
    history: list[dict[str, float]] = []
    last_saved = None
    try:
        for step in range(tr.start_step, config.run.steps):
            m = tr.step(step)
            history.append(m)
            if tr.rank == 0:
                log.info("step %d/%d reward %.4f loss %.5f (%.2fs)", step + 1, config.run.steps, m["reward/mean"],
                         m["loss/policy"], m["time/step_s"])
            if (step + 1) % config.run.save_every == 0 or step + 1 == config.run.steps:
                last_saved = tr.save(step + 1)
        if config.run.steps > tr.start_step:
            state = dict(named_weights(tr.engine))  # collective under ZeRO-3
            if tr.rank == 0:
                final = tr.out / FINAL_MODEL
                tr.engine.module.save_pretrained(final, state_dict=state, safe_serialization=True)
                tr.tokenizer.save_pretrained(final)
    finally:
        tr.writer.close()
        tr.rollout.close()
    summary = {
        "steps_run": len(history), "start_step": tr.start_step, "end_step": config.run.steps,
        "out_dir": str(tr.out), "tensorboard": str(tr.out / "tensorboard"), "records": str(tr.out / RUN_RECORDS),
        "checkpoint": str(last_saved) if last_saved else None, "mode": config.objective.mode,
        "rollout_engine": tr.rollout.name, "world_size": tr.world, "history": history,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None,
    }
    if tr.rank == 0:
        (tr.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary
