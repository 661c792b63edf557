"""Cost before spending: every LLM call a profile makes, per stage, priced from real lengths, with the levers
the project offers (``rubricrl cost --dry-run --profile full``).

Calls per stage follow the configuration (paper scale with ``--profile full``): query synthesis one per
candidate, each rubric stage (checks included) one per query, SFT one per query and teacher, the judge one
per probe sample (selection), per response of a GRPO step (B x G) and per evaluated response.

Tokens per call: the stage's prompt file (its own text, measured from the file) plus the pieces it carries
(``STAGE_CALLS``), and the piece it writes, sized by the ``cost`` section (``schemas/config/cost.py``: means
measured on real apps and a real rubric). A stage whose ledger holds calls a model billed uses their means
instead; the offline rules' rows are left out (their lengths are not a model's), and the basis says which.

Levers, each on top of the ones before it (``LEVERS``; ``configured_levers`` is what the configuration pulls):
- Message Batches: the bulk stages (query synthesis, rubric stages, SFT answers) at ``llm.batch.discount``.
- Prompt caching: a stage's instructions (the system text) read at the cache price by its calls once the
  first has written them, when at least the model's ``min_cacheable_tokens`` long; the judge's query and
  rubric, the head every response of a group shares (``=== per response ===`` in judge.md): one call of
  the group writes it, the G - 1 others read it. Assumed: a group's calls reach the cache within its
  five-minute life and after the first one's reply began (calls sent all at once can all miss).
- The open judge: selection probes and GRPO steps judged by a model you serve, at
  ``llm.prices[cost.open_judge_model]`` (0 per token by default: its GPU time is not in the figure).
Corrective retries and calls already in the response cache are left out.

Run: ``print(format_report(estimate_profile(cfg, ledger_rows, model), model, cfg))``.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from schemas.config import Config
from schemas.config.llm import Prices
from schemas.config.rubrics import RUBRIC_STAGES
from tasks.llm.prompts import load_prompt


@dataclass(frozen=True)
class StageCall:
    """One call of a stage: its prompt file, the ``cost.*`` pieces it carries and the one it writes."""

    prompt: str
    reads: tuple[str, ...]
    writes: str
    bulk: bool = False  # sent through Message Batches
    shared: tuple[str, ...] = ()  # the pieces of the prompt's shared head (the same for a group's calls)
    open_judge: bool = False  # the open judge lever applies


JUDGE = StageCall("judge", ("expanded_query", "rubric", "evidence", "app"), "diagnosis",
                  shared=("expanded_query", "rubric"))
STAGE_CALLS: dict[str, StageCall] = {
    "query_candidates": StageCall("synthesize_query", ("query_spec",), "query", bulk=True),
    "expansions": StageCall("rubric_expansion", ("query",), "expansion", bulk=True),
    "requirements": StageCall("rubric_requirements", ("expanded_query",), "requirements", bulk=True),
    "modules": StageCall("rubric_modules", ("expanded_query", "requirements"), "modules", bulk=True),
    "rubric_candidates": StageCall("rubric_decomposition", ("expanded_query", "requirements", "modules"),
                                   "candidates", bulk=True),
    "rubric_references": StageCall("rubric_filtering", ("expanded_query", "requirements", "candidates"),
                                   "reference", bulk=True),
    "rubric_checks": StageCall("rubric_checks", ("expanded_query", "rubric_items"), "checks", bulk=True),
    "sft_answers": StageCall("generation", ("expanded_query",), "app", bulk=True),
    "judgments (selection probes)": replace(JUDGE, open_judge=True),
    "judgments (GRPO)": replace(JUDGE, open_judge=True),
    "judgments (evaluate)": JUDGE,
    "generations (evaluate, API models)": StageCall("generation", ("expanded_query",), "app", bulk=True),
}

@dataclass(frozen=True)
class Levers:
    batches: bool = False
    caching: bool = False
    open_judge: bool = False


LEVERS: dict[str, Levers] = {  # each on top of the ones above
    "list price": Levers(),
    "+ Message Batches for the bulk stages": Levers(batches=True),
    "+ prompt caching (instructions; a group's query and rubric)": Levers(batches=True, caching=True),
    "+ open judge for probes and GRPO steps": Levers(batches=True, caching=True, open_judge=True),
}


def configured_levers(cfg: Config) -> Levers:
    """The levers the configuration pulls: batches when enabled, caching always (the Anthropic provider marks
    it, OpenAI-compatible servers cache prefixes by themselves), the open judge when the judge is served."""
    return Levers(batches=cfg.llm.batch.enabled, caching=True, open_judge=cfg.llm.provider == "openai")


def call_counts(cfg: Config) -> dict[str, tuple[int, int]]:
    """Stage -> (calls, G: calls of a group sharing one query's head; 1 for calls of different queries)."""
    s, ev = cfg.synth, cfg.evaluation
    n_q = s.n_queries
    counts = {"query_candidates": (math.ceil(round(n_q * (1 + s.oversample), 6)), 1)}
    counts.update({st: (n_q, 1) for st in RUBRIC_STAGES})
    n_sft = min(n_q, cfg.sft.max_queries or n_q)
    counts["sft_answers"] = (n_sft * max(1, len(cfg.sft.teachers)), 1)
    n_probe = min(n_q, cfg.selection.max_candidates or n_q)
    counts["judgments (selection probes)"] = (n_probe * cfg.selection.probe_samples, cfg.selection.probe_samples)
    r = cfg.train.rollout
    counts["judgments (GRPO)"] = (cfg.train.run.steps * r.queries_per_step * r.group_size, r.group_size)
    n_eval = round(n_q * ev.heldout_percent / 100) if ev.benchmark == "heldout" else n_q
    n_eval = min(n_eval, ev.max_queries or n_eval)
    models = max(1, len(ev.models))
    counts["judgments (evaluate)"] = (n_eval * ev.runs * models, ev.runs * models)
    api = sum(m.startswith("api:") for m in ev.models)
    if api:
        counts["generations (evaluate, API models)"] = (n_eval * ev.runs * api, 1)
    return counts


@dataclass(frozen=True)
class CallTokens:
    """One call in tokens: system (cacheable instructions), head (the group's shared rest of the prefix),
    rest (what changes per call), output."""

    system: int
    head: int
    rest: int
    output: int
    basis: str

    @property
    def input(self) -> int:
        return self.system + self.head + self.rest


def _prompt_tokens(prompt: str, chars_per_token: float) -> tuple[int, int, int]:
    """(system, user head, user rest) template text of a prompt file in tokens, placeholders left out."""
    t = load_prompt(prompt)
    bare = lambda text: round(len(re.sub(r"\{\{\s*\w+\s*\}\}", "", text)) / chars_per_token)  # noqa: E731
    head = bare(t.shared_head)
    return bare(t.system), head, bare(t.user) - head


def call_tokens(call: StageCall, sizes: dict[str, int], chars_per_token: float) -> CallTokens:
    """A stage's call from the token model (pure but for reading its prompt file)."""
    system, head_text, user_text = _prompt_tokens(call.prompt, chars_per_token)
    head = head_text + sum(sizes[p] for p in call.shared)
    rest = user_text + sum(sizes[p] for p in call.reads if p not in call.shared)
    parts = " + ".join(f"{p} {sizes[p]:,}" for p in call.reads)
    return CallTokens(system, head, rest, sizes[call.writes],
                      f"{call.prompt}.md {system + head_text + user_text:,} + {parts} -> {call.writes} "
                      f"{sizes[call.writes]:,}")


def ledger_means(rows: list[dict[str, Any]]) -> dict[str, tuple[float, float, int]]:
    """Stage -> (mean input incl. cache reads and writes, mean output, calls) of calls a model billed."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        if r["cached"] or r.get("provider") == "offline" or r.get("status") not in (None, "ok"):
            continue
        s = sums[r["stage"]]
        s[0] += r["input_tokens"] + r.get("cache_read_tokens", 0) + r.get("cache_write_tokens", 0)
        s[1] += r["output_tokens"]
        s[2] += 1
    return {k: (v[0] / v[2], v[1] / v[2], int(v[2])) for k, v in sums.items() if v[2]}


def with_ledger(tokens: CallTokens, mean: tuple[float, float, int] | None) -> CallTokens:
    """The token model's call, its totals replaced by the ledger's means where a model billed calls (pure)."""
    if mean is None:
        return tokens
    tin, tout, n = mean
    rest = max(0, round(tin) - tokens.system - tokens.head)
    return replace(tokens, rest=rest, output=round(tout), basis=f"ledger: mean of {n:,} billed calls")


def input_usd(t: CallTokens, group: int, price: Prices, caching: bool) -> float:
    """Mean input cost of one call, USD per million tokens x tokens (pure). With caching: the system text read
    from the cache when long enough; a group's shared head written by its first call, read by the others."""
    if not caching:
        return t.input * price.input
    sys_cached = t.system >= price.min_cacheable_tokens
    head_cached = t.head > 0 and t.system + t.head >= price.min_cacheable_tokens and group > 1
    if not head_cached:
        return (t.system * (price.cache_read if sys_cached else price.input)
                + (t.head + t.rest) * price.input)
    read_first = t.system if sys_cached else 0
    first = read_first * price.cache_read + (t.system + t.head - read_first) * price.cache_write
    others = (t.system + t.head) * price.cache_read
    return (first + (group - 1) * others) / group + t.rest * price.input


@dataclass
class StageCost:
    stage: str
    calls: int
    group: int
    tokens: CallTokens
    call: StageCall

    @property
    def judge(self) -> bool:
        return self.call.prompt == "judge"

    def usd(self, levers: Levers, price: Prices, open_price: Prices, discount: float) -> float:
        """This stage's cost with ``levers`` pulled (pure)."""
        p = open_price if levers.open_judge and self.call.open_judge else price
        d = discount if levers.batches and self.call.bulk else 1.0
        return d * self.calls * (input_usd(self.tokens, self.group, p, levers.caching) + self.tokens.output * p.output) / 1e6


def estimate_profile(cfg: Config, ledger_rows: list[dict[str, Any]], model: str) -> list[StageCost]:
    """Every stage of ``cfg``'s profile priced for ``model`` under each lever."""
    llm = cfg.llm
    sizes = cfg.cost.model_dump(exclude={"open_judge_model"})
    means = ledger_means(ledger_rows)
    rows = []
    for stage, (calls, group) in call_counts(cfg).items():
        t = with_ledger(call_tokens(STAGE_CALLS[stage], sizes, llm.chars_per_token), means.get(stage.split(" ")[0]))
        rows.append(StageCost(stage, calls, group, t, STAGE_CALLS[stage]))
    return rows


def offline_note(ledger_rows: list[dict[str, Any]]) -> str:
    n = sum(r.get("provider") == "offline" for r in ledger_rows)
    return (f"{n:,} offline ledger rows left out: the rules' lengths are not a model's\n") if n else ""


def lever_totals(rows: list[StageCost], levers: Levers, cfg: Config, model: str) -> tuple[float, float]:
    """(bulk stages, judge) USD with ``levers`` pulled."""
    price, open_price = cfg.llm.price(model), cfg.llm.price(cfg.cost.open_judge_model)
    usd = [(r.judge, r.usd(levers, price, open_price, cfg.llm.batch.discount)) for r in rows]
    return sum(u for j, u in usd if not j), sum(u for j, u in usd if j)


def format_report(rows: list[StageCost], model: str, cfg: Config) -> str:
    """The per-stage table (calls, tokens per call, list price, basis) and the totals under each lever."""
    price, open_price = cfg.llm.price(model), cfg.llm.price(cfg.cost.open_judge_model)
    lines = [f"dry run, model {model} at ${price.input:g} in / ${price.output:g} out per million tokens (cache "
             f"read ${price.cache_read:g}, write ${price.cache_write:g}; prefixes under {price.min_cacheable_tokens:,}"
             " tokens are not cached); nothing was called",
             f"tokens: characters / {cfg.llm.chars_per_token:g}; sizes in the cost section (rubricrl config; "
             "--set cost.app=6000 to change one); G: calls sharing one query's head", "",
             f"{'stage':<36} {'calls':>9} {'G':>3} {'in/call':>8} {'out/call':>8} {'list usd':>11}  basis"]
    for r in rows:
        lines.append(f"{r.stage:<36} {r.calls:>9,} {r.group:>3} {r.tokens.input:>8,} {r.tokens.output:>8,} "
                     f"{r.usd(Levers(), price, open_price, 1.0):>11,.0f}  {r.tokens.basis}")
    lines += ["", f"{'USD':<62} {'bulk stages':>11} {'judge':>9} {'total':>9} {'judge share':>11}"]
    now = configured_levers(cfg)
    for name, levers in [*LEVERS.items(), ("as configured now", now)]:
        bulk, judge = lever_totals(rows, levers, cfg, model)
        share = 100 * judge / (bulk + judge) if bulk + judge else 0.0
        lines.append(f"{name:<62} {bulk:>11,.0f} {judge:>9,.0f} {bulk + judge:>9,.0f} {share:>10.0f}%")
    lines += [f"  Message Batches {'on' if now.batches else 'off'} (llm.batch.enabled, x{cfg.llm.batch.discount:g}); "
              f"judge provider {cfg.llm.provider} (llm.provider; the open judge is llm.provider=openai)",
              f"  open judge priced as llm.prices[{cfg.cost.open_judge_model!r}] = ${open_price.input:g} in / "
              f"${open_price.output:g} out per million tokens: the GPU time of serving it is not in these figures "
              "unless you price it there",
              "  caching assumes a group's calls reach the cache within its five minutes and after the first reply "
              "began; corrective retries are left out"]
    return "\n".join(lines)
