"""The token model of the dry-run cost estimate (``rubricrl cost --dry-run``): the ``cost`` section.

A call's input is its prompt file's own text (measured from the file) plus the pieces it carries; its output
is the piece it writes. Which stage carries and writes which piece is ``STAGE_CALLS`` in ``tasks/llm/cost.py``;
the size of each piece is here, in tokens, for the user to set (``--set cost.app=6000``).

Defaults are means measured by ``bench/bench_token_model.py`` (at ``llm.chars_per_token`` = 4): the rubric
pieces on the paper's q5 (its recorded model answers replayed through each stage's own prompt rendering, a
real rubric of 17 items), the apps on all 3,597 answers of 13 models in InteractScience (real LLM-written
apps, 11,429 characters on average: 6,011 to 17,832 from the 10th to the 90th percentile), the judge's
evidence on 24 of them loaded in the browser under q5, its reply on the paper's G.2 finding (638 characters)
for each unmet item at the share of functional tests those apps fail (0.87, InteractScience's published
PFT results of its 3 labelled models). A stronger policy fails fewer items, so the judge writes less: set
``cost.diagnosis`` from your own ledger once a run has paid for some judgments.

This section enters no stage's fingerprint: changing it re-prices, never rebuilds.
"""
from __future__ import annotations

from pydantic import Field

from schemas.config.base import Section


class CostConfig(Section):
    """Token sizes of what the LLM calls carry and write, for the dry-run estimate (see the module docstring)."""

    query_spec: int = Field(119, ge=0, description="synthesize-queries: a candidate's domain, subject, persona and "
                                                  "capabilities as its request renders them (200 specs)")
    query: int = Field(189, ge=0, description="A user's request (q5: 757 characters)")
    expansion: int = Field(1080, ge=0, description="What the expansion stage writes (q5's recorded answer)")
    expanded_query: int = Field(278, ge=0, description="The expanded query every later stage and the judge carry")
    requirements: int = Field(1166, ge=0, description="The requirement map (q5: 16 must-cover requirements)")
    modules: int = Field(540, ge=0, description="The module map (q5)")
    candidates: int = Field(2092, ge=0, description="The rubric candidates (q5)")
    reference: int = Field(2288, ge=0, description="What filtering writes: final items, decisions, reports (q5)")
    rubric_items: int = Field(1121, ge=0, description="The final items with verification, as the checks stage "
                                                     "reads them (q5: 17 items)")
    checks: int = Field(544, ge=0, description="The executable checks written for them (q5)")
    rubric: int = Field(687, ge=0, description="The compact rubric the judge reads (q5: id, scope, requirement, "
                                               "level of 17 items)")
    app: int = Field(2857, ge=0, description="One generated application: what a generator writes and the judge "
                                             "reads (InteractScience answers' mean)")
    evidence: int = Field(176, ge=0, description="What the browser observed and the checks' results, in the judge "
                                                 "prompt (mean of 24 apps under q5)")
    diagnosis: int = Field(2412, ge=0, description="The judge's reply: three layers and one finding per unmet item")
    open_judge_model: str = Field("local", description="The llm.prices entry of the open judge lever (a model you "
                                                       "serve: rubricrl serve-judge). 0 per token by default: the "
                                                       "GPU time it takes is not in the figure unless you price it")
