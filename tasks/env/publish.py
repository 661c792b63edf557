"""Scored rollouts as stages: ``judgments``, ``rewards`` and ``check_results`` (paper 3.3), the one way every
flow that scores publishes them (score-rollouts; select-rl-queries as ``probe_*``; train-rl from its run's
records), all three under one fingerprint.

The fingerprint is the whole ``env`` section less ``FINGERPRINT_EXCLUDED`` (``schemas/config/env.py``, the
settings that cannot change a verdict, each with its reason) and the CDN mirror's content: a new setting
of the section enters it without anyone listing it. Every ``rewards`` row carries it (``reward_config_hash``).
"""
from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Callable, Iterable, NamedTuple

import pyarrow as pa

from schemas.config.env import FINGERPRINT_EXCLUDED, EnvConfig
from schemas.contracts.env import (CHECK_RESULTS_SCHEMA, JUDGMENTS_SCHEMA, REWARDS_SCHEMA, check_results_suites,
                                   judgments_suites, reward_suites_for)
from tasks.env.cdn import mirror_fingerprint
from tasks.llm.base import Provider
from tasks.stages.stage import StageOutcome, StageSpec, run_stage
from tasks.stages.store import StageStore


class ScoredTables(NamedTuple):
    """One part's rows of the three stages (schemas/contracts/env.py, schemas/contracts/env.py)."""

    judgments: pa.Table
    rewards: pa.Table
    check_results: pa.Table


SCHEMAS = ScoredTables(JUDGMENTS_SCHEMA, REWARDS_SCHEMA, CHECK_RESULTS_SCHEMA)


class ScoredStages(NamedTuple):
    judgments: StageOutcome
    rewards: StageOutcome
    check_results: StageOutcome


def without(data: dict[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """``data`` less the dotted ``paths`` (pure; a path that is not there is refused: a typo would keep a
    setting in the fingerprint that was meant to be out)."""
    out = copy.deepcopy(data)
    for path in paths:
        *parents, leaf = path.split(".")
        node: Any = out
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        if not isinstance(node, dict) or leaf not in node:
            raise KeyError(f"env.{path} is not a setting of the env section; fix FINGERPRINT_EXCLUDED "
                           "(schemas/config/env.py)")
        del node[leaf]
    return out


def fingerprint_of(env: dict[str, Any], mirror: str | None) -> str:
    """The fingerprint of a dumped ``env`` section and the mirror's identity (pure)."""
    data = {"env": without(env, (p for p, _why in FINGERPRINT_EXCLUDED)), "cdn_mirror": mirror}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def env_fingerprint(cfg: EnvConfig) -> str:
    """What a scored row depends on in the environment's configuration (see the module docstring)."""
    mirror = mirror_fingerprint(cfg.runtime.cdn_root()) if cfg.runtime.enabled else None
    return fingerprint_of(cfg.model_dump(mode="json"), mirror)


def _check_stats(t: pa.Table) -> dict[str, Any]:
    status = t.column("status").to_pylist()
    return {s: status.count(s) for s in ("passed", "failed", "inconclusive")}


def publish_scores(store: StageStore, part_keys: list[str], make_part: Callable[[str], ScoredTables], *,
                   env: EnvConfig, provider: Provider, inputs: dict[str, str], prefix: str = "",
                   extra: dict[str, Any] | None = None, force: bool = False) -> ScoredStages:
    """Publish ``<prefix>judgments``, ``<prefix>rewards`` and ``<prefix>check_results`` from the parts
    ``make_part`` scores (called once per part key, whichever stage needs it first). ``inputs``: the stages
    the rollouts came from; ``extra``: what else identifies them (a run, its files); ``provider``: the judge."""
    made: dict[str, ScoredTables] = {}

    def part(key: str) -> ScoredTables:
        if key not in made:
            made[key] = make_part(key)
        return made[key]

    env_json = env.model_dump(mode="json")
    common: dict[str, Any] = dict(provider=provider.name, config={"env": env_json}, config_hash=env_fingerprint(env),
                  extra={"judge": [provider.name, provider.model], **(extra or {})}, force=force)
    names = ScoredTables(*(prefix + n for n in ScoredTables._fields))
    judg = run_stage(store, StageSpec(names.judgments, SCHEMAS.judgments, judgments_suites), part_keys=part_keys,
                     make_part=lambda k: part(k).judgments, inputs=dict(inputs), **common)
    after = {**inputs, names.judgments: judg.manifest.version}
    rew = run_stage(store, StageSpec(names.rewards, SCHEMAS.rewards, lambda: reward_suites_for(env.reward)),
                    part_keys=part_keys, make_part=lambda k: part(k).rewards, inputs=after, **common)
    chk = run_stage(store, StageSpec(names.check_results, SCHEMAS.check_results, check_results_suites),
                    part_keys=part_keys, make_part=lambda k: part(k).check_results, inputs=after,
                    stats=_check_stats, **common)
    return ScoredStages(judg, rew, chk)
