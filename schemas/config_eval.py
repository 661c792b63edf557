"""evaluate (paper 4.1, Table 1): which policies to score on which held-out queries, how many sampling runs.

The ``evaluation`` section of ``schemas/config.py``; ``EVAL_DEMO_OVERRIDES`` is its part of the demo
profile.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    models: list[str] = Field(default_factory=list, description="Generators: policy checkpoints (HF directories), "
                                                                 "folders of responses (<query_id>.txt, or "
                                                                 "run-<k>/<query_id>.txt per sampling run), or API "
                                                                 "models (api:anthropic/<model>, "
                                                                 "api:openai/<model>@<base_url>); empty = the newest "
                                                                 "policy. The first is the baseline of the delta "
                                                                 "columns")
    benchmark: Literal["heldout", "ingested"] = Field("heldout", description="Queries to evaluate on: our held-out "
                                                                              "split, or the ingested benchmark set "
                                                                              "(rubricrl ingest FILE.jsonl)")
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


EVAL_DEMO_OVERRIDES: dict[str, Any] = {"max_queries": 8, "runs": 2, "max_new_tokens": 300, "max_prompt_tokens": 768}
