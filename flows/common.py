"""What every flow shares: resolved config, store, provider, and the stage summary artifact."""
from __future__ import annotations

import logging
import os
import shlex
from dataclasses import dataclass
from typing import Any

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from schemas.config import Config, load_config
from schemas.config.llm import LLMConfig
from schemas.layout import VALIDATION
from tasks.env.publish import ScoredStages
from tasks.env.score_tables import missing_counts
from tasks.llm import Provider, get_provider
from tasks.stages.stage import StageOutcome
from tasks.stages.store import StageStore


@dataclass
class FlowContext:
    cfg: Config
    store: StageStore
    provider: Provider

    def pinned_llm(self) -> LLMConfig:
        """The LLM settings with the provider this run resolved (``auto`` decided once, here), for the
        processes it starts: they build their own provider from these and must not decide again."""
        return self.cfg.resolved_llm().model_copy(update={"provider": self.provider.name})


def flow_context(profile: str | None, sets: list[str] | None) -> FlowContext:
    cfg = load_config(profile, sets=sets)
    store = StageStore(cfg.data_dir, rebuild_command=rerun_command(cfg.profile, sets))
    provider = get_provider(config=cfg.resolved_llm(), run_id=_run_id())
    logger = get_run_logger()
    logger.info("resolved configuration (profile %s): %s", cfg.profile, cfg.model_dump_json())
    logger.info("provider: %s (%s); data dir: %s", provider.name, provider.model, store.root)
    if provider.name == "offline":
        logger.warning("running OFFLINE: no ANTHROPIC_API_KEY, every row is produced by deterministic rules "
                       "and marked provider=offline")
    return FlowContext(cfg, store, provider)


def rerun_command(profile: str, sets: list[str] | None) -> str:
    """This flow run as a ``rubricrl run`` command with its settings (the environment's overrides, then its
    ``--set`` items): what rebuilds the stages it publishes."""
    from prefect.runtime import flow_run

    name = flow_run.get_flow_name()
    if not name:
        return ""
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items())
           if k == "RUBRICRL_DATA_DIR" or (k.startswith("RUBRICRL_") and "__" in k)]
    return " ".join([*env, shlex.join(["rubricrl", "run", "--only", name, "--profile", profile,
                                       *[a for s in sets or [] for a in ("--set", s)]])])


def _run_id() -> str | None:
    from prefect.runtime import flow_run

    rid = flow_run.get_id()
    return str(rid) if rid else None


def forward_library_logs() -> None:
    """Let the plain ``logging`` of tasks/ reach the Prefect run logs."""
    os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "rubricrl")
    logging.getLogger("rubricrl").setLevel(logging.INFO)


def stage_summary(outcome: StageOutcome, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    m = outcome.manifest
    return {"stage": m.stage, "rows": m.row_count, "version": m.version, "skipped": outcome.skipped,
            "resumed_parts": outcome.resumed_parts, "made_parts": outcome.made_parts, "provider": m.provider,
            "validation": m.validation.get("summary", ""), **(extra or {})}


def scored_summaries(stages: ScoredStages, store: StageStore) -> list[dict[str, Any]]:
    """The artifact rows of the three scored stages: the rewards with their missing ones counted, the checks
    with their statuses."""
    rew, chk = stages.rewards, stages.check_results
    return [stage_summary(stages.judgments), stage_summary(rew, missing_counts(store.read(rew.manifest.stage))),
            stage_summary(chk, {k: v for k, v in chk.manifest.stats.items() if k != "rows"})]


def publish_ledger(fc: FlowContext) -> dict[str, Any] | None:
    """Publish the LLM ledger as the ``llm_calls`` stage; return this run's cost summary (None: no ledger)."""
    from tasks.llm.ledger import publish_llm_calls, summarize

    store = getattr(fc.provider, "store", None)
    if store is None:
        return None
    publish_llm_calls(fc.store, store, fc.store.root / VALIDATION)
    rows = store.ledger_rows(_run_id())
    return summarize(rows).get("total") if rows else None


def publish_artifact(flow_name: str, summaries: list[dict[str, Any]], notes: str = "",
                     fc: FlowContext | None = None) -> None:
    """One markdown artifact per flow run: row counts, validation, provider, cost per stage; with ``fc``
    the LLM ledger is published too (``llm_calls``) and this run's calls and cost are added."""
    if fc is not None and (cost := publish_ledger(fc)) is not None:
        line = (f"LLM calls this run: {cost['calls']} ({cost['missing']} missing, {cost['cached']} cached), "
                f"{cost['input_tokens']} input / {cost['output_tokens']} output tokens, "
                f"cost ${cost['cost_usd']:.4f} (provider {fc.provider.name})")
        notes = f"{line}\n\n{notes}" if notes else line
    keys = sorted({k for s in summaries for k in s})
    order = ["stage", "rows", "validation", "provider", "cost_usd", "skipped", "resumed_parts", "made_parts", "version"]
    cols = [k for k in order if k in keys] + [k for k in keys if k not in order]
    lines = [f"# {flow_name}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(s.get(c, "")) for c in cols) + " |" for s in summaries]
    if notes:
        lines += ["", notes]
    create_markdown_artifact(markdown="\n".join(lines), key=f"{flow_name}-summary",
                             description=f"{flow_name}: stages published in this run")
