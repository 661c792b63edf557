"""The dry-run cost estimate: call counts at paper scale, tokens per call from the token model (it follows the
app and rubric sizes it is given), billed ledger means over the model, the prompt-cache arithmetic by hand,
and the levers on the full profile."""
import pytest

from schemas.config import load_config
from schemas.config.llm import Prices
from tasks.llm.cost import (LEVERS, CallTokens, Levers, call_counts, estimate_profile, format_report, input_usd,
                            lever_totals)

MODEL = "claude-opus-4-8"


def _by_stage(cfg, rows=()):
    return {r.stage: r for r in estimate_profile(cfg, list(rows), MODEL)}


def test_full_profile_counts_follow_the_paper_scale():
    cfg = load_config("full", environ={})
    c = call_counts(cfg)
    assert c["expansions"] == c["rubric_references"] == (55_000, 1)
    assert c["query_candidates"] == (59_400, 1)
    assert c["judgments (GRPO)"] == (cfg.train.run.steps * 64 * 8, 8)
    assert c["judgments (selection probes)"] == (55_000 * 8, 8)
    assert c["judgments (evaluate)"] == (5_500 * 8, 8)  # 10 % held out, 8 runs, the newest policy


def test_the_estimate_follows_the_app_and_rubric_sizes_it_is_given():
    base = _by_stage(load_config("full", environ={}))
    big = _by_stage(load_config("full", environ={}, sets=["cost.app=6000", "cost.rubric=2000"]))
    judge, judge2 = base["judgments (GRPO)"].tokens, big["judgments (GRPO)"].tokens
    assert judge2.rest - judge.rest == 6000 - 2857  # the app is read per response
    assert judge2.head - judge.head == 2000 - 687  # the rubric sits in the group's shared head
    assert (big["sft_answers"].tokens.output, base["sft_answers"].tokens.output) == (6000, 2857)  # the app written
    assert big["sft_answers"].tokens.input == base["sft_answers"].tokens.input  # the twin: a rubric SFT never reads
    assert big["expansions"].tokens == base["expansions"].tokens
    price = Prices.anthropic_style(5.0, 25.0)
    calls = 200 * 64 * 8
    expect = calls * (judge2.input * 5.0 + judge2.output * 25.0) / 1e6
    assert big["judgments (GRPO)"].usd(Levers(), price, price, 0.5) == pytest.approx(expect)
    assert judge2.input == judge2.system + judge2.head + judge2.rest and judge.basis.startswith("judge.md ")


def test_billed_ledger_means_replace_the_model_and_offline_rows_are_left_out():
    cfg = load_config("full", environ={})
    rows = [{"stage": "judgments", "provider": "anthropic", "status": "ok", "cached": False, "input_tokens": 6000,
             "cache_read_tokens": 3000, "cache_write_tokens": 1000, "output_tokens": 1500},
            {"stage": "judgments", "provider": "anthropic", "status": "ok", "cached": False, "input_tokens": 8000,
             "cache_read_tokens": 1000, "cache_write_tokens": 1000, "output_tokens": 2500},
            {"stage": "judgments", "provider": "anthropic", "status": "ok", "cached": True, "input_tokens": 10**9,
             "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 10**9},
            {"stage": "expansions", "provider": "offline", "status": "ok", "cached": False, "input_tokens": 7,
             "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 7}]
    out, model = _by_stage(cfg, rows), _by_stage(cfg)
    t = out["judgments (selection probes)"].tokens
    assert (t.input, t.output) == (10_000, 2000) and t.basis == "ledger: mean of 2 billed calls"
    assert out["expansions"].tokens == model["expansions"].tokens  # offline rule lengths are not a model's


def test_prompt_cache_arithmetic_by_hand():
    t = CallTokens(system=2000, head=1000, rest=3000, output=0, basis="")
    p = Prices(input=5.0, output=25.0, cache_read=0.5, cache_write=6.25, min_cacheable_tokens=1024)
    assert input_usd(t, 8, p, caching=False) == 6000 * 5.0
    # the group's first call reads the system text and writes the head; the 7 others read both
    first, other = 2000 * 0.5 + 1000 * 6.25, 3000 * 0.5
    assert input_usd(t, 8, p, caching=True) == pytest.approx((first + 7 * other) / 8 + 3000 * 5.0)
    assert input_usd(t, 1, p, caching=True) == 2000 * 0.5 + 4000 * 5.0  # no group: only the instructions
    short = p.model_copy(update={"min_cacheable_tokens": 4096})  # the twin: a prefix too short is not cached
    assert input_usd(t, 8, short, caching=True) == 6000 * 5.0
    both = p.model_copy(update={"min_cacheable_tokens": 2500})  # system alone too short, system + head not
    assert input_usd(t, 8, both, caching=True) == pytest.approx((3000 * 6.25 + 7 * 3000 * 0.5) / 8 + 3000 * 5.0)


def test_the_levers_bring_the_full_profiles_judge_share_down_by_half():
    cfg = load_config("full", environ={})
    rows = estimate_profile(cfg, [], MODEL)
    totals = {name: lever_totals(rows, lv, cfg, MODEL) for name, lv in LEVERS.items()}
    (bulk0, judge0), (bulk1, judge1) = totals["list price"], totals["+ Message Batches for the bulk stages"]
    assert bulk1 == pytest.approx(bulk0 * cfg.llm.batch.discount) and judge1 == judge0
    last = list(totals.values())
    assert last[2][1] < judge0 and last[3][1] <= judge0 / 2
    assert last[3][1] / sum(last[3]) <= (judge0 / (bulk0 + judge0)) / 2
    text = format_report(rows, MODEL, cfg)
    for needle in ("judgments (selection probes)", "judge.md ", "-> diagnosis", "as configured now", "GPU time"):
        assert needle in text
