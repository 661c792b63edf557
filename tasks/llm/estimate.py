"""Dry run: count a stage's calls and estimate tokens and cost without calling any API.

Input tokens are the rendered prompt's characters / ``chars_per_token`` (4 for English text and
code; the real tokenizer is only reachable through the API, which a dry run must not call).
Output tokens per call are, in order of preference: the caller's figure, the mean of earlier
billed calls of the same prompt in the ledger, or ``max_tokens`` (an upper bound; the basis says
which). Calls already in the response cache are counted apart and cost nothing. Prompt-cache
discounts are ignored, so the figure errs high.

Run: ``print(format_estimate(estimate(requests, "claude-opus-4-8")))``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from schemas.config.llm import LLMConfig, Prices
from tasks.llm.base import LLMRequest, Usage, trip_key
from tasks.llm.ledger import cost_usd

if TYPE_CHECKING:
    from tasks.llm.cache import CallStore


@dataclass
class Estimate:
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float
    model: str = ""
    cached_calls: int = 0
    basis: str = ""


def _mean_output_tokens(store: "CallStore", prompt: str) -> float | None:
    rows = [r for r in store.ledger_rows() if r["prompt"] == prompt and r["status"] == "ok" and not r["cached"]]
    if not rows:
        return None
    return sum(r["output_tokens"] / max(1, r["attempts"]) for r in rows) / len(rows)


def estimate(requests: Iterable[LLMRequest], model: str, prices: Prices | LLMConfig | None = None, *,
             output_tokens_per_call: int | None = None, store: "CallStore | None" = None,
             provider: str = "anthropic", chars_per_token: float = 4.0, batch_discount: float = 1.0) -> Estimate:
    """Count calls, estimate tokens and USD for ``model``. ``batch_discount=0.5`` prices Message Batches."""
    if isinstance(prices, LLMConfig) or prices is None:
        price = (prices or LLMConfig()).price(model)
    else:
        price = prices
    calls = cached = in_tok = out_tok = 0
    means: dict[str, float | None] = {}
    bases: set[str] = set()
    for req in requests:
        calls += 1
        system, user = req.template.render(req.variables)
        if store is not None:
            messages = [{"role": "user", "content": user}]
            if store.get(trip_key(provider, model, req, system, messages)) is not None:
                cached += 1
                continue
        in_tok += int((len(system) + len(user)) / chars_per_token) + 1
        if output_tokens_per_call is not None:
            out_tok += output_tokens_per_call
            bases.add("given output tokens per call")
            continue
        if req.prompt not in means:
            means[req.prompt] = _mean_output_tokens(store, req.prompt) if store is not None else None
        mean = means[req.prompt]
        if mean is not None:
            out_tok += int(round(mean))
            bases.add(f"ledger mean output of prompt {req.prompt!r}")
        else:
            out_tok += req.max_tokens
            bases.add(f"max_tokens upper bound for prompt {req.prompt!r}")
    usd = cost_usd(Usage(input_tokens=in_tok, output_tokens=out_tok), price, batch_discount)
    return Estimate(calls, in_tok, out_tok, round(usd, 4), model, cached, "; ".join(sorted(bases)) or "no calls")


def format_estimate(est: Estimate, label: str = "") -> str:
    head = f"dry run{' ' + label if label else ''}: {est.calls:,} calls to {est.model}"
    if est.cached_calls:
        head += f" ({est.cached_calls:,} already cached, free)"
    return (f"{head}\n  input tokens ~{est.input_tokens:,}  output tokens ~{est.output_tokens:,}  "
            f"cost ~${est.usd:,.2f}\n  output basis: {est.basis}")


def add(estimates: Iterable[Estimate], model: str = "") -> Estimate:
    """Sum per-stage estimates into one (for a whole profile)."""
    ests = list(estimates)
    return Estimate(sum(e.calls for e in ests), sum(e.input_tokens for e in ests), sum(e.output_tokens for e in ests),
                    round(sum(e.usd for e in ests), 4), model or (ests[0].model if ests else ""),
                    sum(e.cached_calls for e in ests), "; ".join(sorted({e.basis for e in ests})))
