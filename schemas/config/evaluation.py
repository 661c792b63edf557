"""evaluate (paper 4.1, Table 1): which policies to score on which queries (held out, or an ingested benchmark),
how many sampling runs, and how the ingested benchmark's own metric is computed (``OfficialConfig``).

The ``evaluation`` section of ``schemas/config/``; ``EVAL_DEMO_OVERRIDES`` is its part of the demo
profile.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from schemas.config.base import Section
from schemas.config.train import DEMO_MAX_NEW_TOKENS

BUILTIN_BENCHMARKS = ("heldout", "ingested")  # evaluation.benchmark may also name the ingested benchmark


class OfficialConfig(Section):
    """The ingested benchmark's own metric beside ours (``official_*`` columns of eval_results; docs/benchmarks.md)."""

    enabled: bool = Field(True, description="Score every app of an ingested benchmark by that benchmark's own "
                                            "protocol too: InteractScience's Playwright tests, ArtifactsBench's "
                                            "multimodal checklist judge, WebGen-Bench's test cases")
    pft_dir: Path = Field(Path("vendor/pft"), description="Node's pinned @playwright/test that runs a benchmark's "
                                                          "specs (npm ci --prefix vendor/pft --ignore-scripts); "
                                                          "relative paths are under the project")
    pft_workers: int = Field(2, ge=1, description="Playwright Test workers of one PFT run (the benchmark runs its "
                                                  "specs fully parallel)")
    pft_apps_per_run: int = Field(20, ge=1, description="Apps whose specs one Playwright Test run takes; a "
                                                        "generator's apps go in runs of this many")
    pft_run_timeout_s: float = Field(3600.0, gt=0, description="Limit of one Playwright Test run; past it the apps "
                                                               "of that run get no official score (the environment's "
                                                               "failure)")
    judge_max_answer_chars: int = Field(108_000, ge=1000, description="ArtifactsBench: the answer shown to the "
                                                                      "multimodal judge is cut here (the benchmark "
                                                                      "cuts its judge prompt at 27,000 tokens)")
    judge_max_tokens: int = Field(2048, ge=64, description="ArtifactsBench: reply limit of the multimodal judge")


class EvalConfig(Section):
    models: list[str] = Field(default_factory=list, description="Generators: policy checkpoints (HF directories), "
                                                                 "policy:sft / policy:newest (the SFT or the newest "
                                                                 "checkpoint in the data directory), folders of "
                                                                 "responses (<query_id>.txt, or "
                                                                 "run-<k>/<query_id>.txt per sampling run), or API "
                                                                 "models (api:anthropic/<model>, "
                                                                 "api:openai/<model>@<base_url>); empty = the newest "
                                                                 "policy. The first is the baseline of the delta "
                                                                 "columns")
    benchmark: str = Field("heldout", min_length=1, description="Queries to evaluate on: heldout (our held-out "
                                                                 "split), ingested (every ingested query), or the "
                                                                 "ingested benchmark by name (its file name without "
                                                                 ".jsonl, e.g. interactscience)")
    heldout_percent: float = Field(10.0, ge=0, le=100, description="Share of queries with references held out for "
                                                                   "evaluation (stable hash of the query id); "
                                                                   "select-rl-queries never picks them")
    max_queries: int | None = Field(None, ge=1, description="Evaluate at most this many held-out queries (None = all)")
    runs: int = Field(8, ge=1, description="Sampling runs averaged (the paper averages MiniAppBench over 8)")
    max_new_tokens: int = Field(16384, ge=1, description="Generation length limit per response")
    max_prompt_tokens: int = Field(4096, ge=8, description="Longer prompts are cut from the left")
    temperature: float = Field(1.0, gt=0.0, description="Sampling temperature")
    seed: int = Field(0, description="Run k samples with seed + k")
    screenshots: bool = Field(True, description="Keep a screenshot of each evaluated app after load and after the "
                                                "probe (stages/eval_results/screenshots/, paths in eval_results, "
                                                "thumbnails in the report); needs env.runtime.enabled")
    screenshot_timeout_s: float = Field(5.0, gt=0, description="Limit of one screenshot; its time is added to the "
                                                               "app's hard limit, so verdicts do not change")
    official: OfficialConfig = Field(default_factory=OfficialConfig)


# The demo sets the SFT policy beside the newest (RL) one: what train-rl changed, in one table.
EVAL_DEMO_OVERRIDES: dict[str, Any] = {"models": ["policy:sft", "policy:newest"], "max_queries": 8, "runs": 2, "max_new_tokens": DEMO_MAX_NEW_TOKENS, "max_prompt_tokens": 768}
