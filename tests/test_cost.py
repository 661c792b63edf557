from schemas.config import load_config
from schemas.config_llm import Prices
from tasks.llm.cost import call_counts, estimate_profile


def test_full_profile_counts_follow_the_paper_scale():
    c = call_counts(load_config("full", environ={}))
    assert c["expansions"] == c["rubric_references"] == 55_000
    assert c["query_candidates"] == 59_400
    cfg = load_config("full", environ={})
    assert c["judgments (GRPO)"] == cfg.train.run.steps * 64 * 8


def test_estimate_uses_ledger_means_and_prices():
    cfg = load_config("demo", environ={})
    rows = [{"stage": "expansions", "cached": False, "input_tokens": 1000, "output_tokens": 500},
            {"stage": "expansions", "cached": False, "input_tokens": 3000, "output_tokens": 1500},
            {"stage": "expansions", "cached": True, "input_tokens": 10**9, "output_tokens": 10**9}]
    out = {r.stage: r for r in estimate_profile(cfg, rows, Prices(input=2.0, output=10.0, cache_read=0.2, cache_write=2.5))}
    e = out["expansions"]
    assert e.calls == 200 and e.input_tokens == 200 * 2000 and e.output_tokens == 200 * 1000
    assert abs(e.usd - 200 * (2000 * 2.0 + 1000 * 10.0) / 1e6) < 1e-9
    assert e.basis == "ledger mean" and out["modules"].basis.startswith("default guess")
