"""The fake judge API's long-tailed latency (fakes/http_fake.LongTail), used by bench/bench_stream.py:
the draws have the asked median and p95, the same request always waits the same time (serial and streamed
runs compare fairly), and the real SDK really waits it."""
from __future__ import annotations

import statistics
import time

import pytest

from fakes.http_fake import LongTail


def test_draws_have_the_asked_median_and_p95():
    lt = LongTail(median_s=8.0, p95_s=30.0)
    draws = sorted(lt.draw(f"rollout-{i}") for i in range(4000))
    assert statistics.median(draws) == pytest.approx(8.0, rel=0.06)
    assert draws[int(0.95 * len(draws))] == pytest.approx(30.0, rel=0.10)
    assert draws[-1] > 2 * 30.0  # a long tail: the worst of 4000 is far past the p95


def test_the_same_request_gets_the_same_latency_whatever_the_order():
    a, b = LongTail(scale=0.01, seed=3), LongTail(scale=0.01, seed=3)
    keys = [f"k{i}" for i in range(50)]
    assert [a.draw(k) for k in keys] == [b.draw(k) for k in reversed(keys)][::-1]
    assert a.delay_for({"x": 1, "y": [2]}) == b.delay_for({"y": [2], "x": 1})  # key order in the body is no matter
    other = LongTail(scale=0.01, seed=4)
    assert sum(a.draw(k) != other.draw(k) for k in keys) == len(keys)  # the seed changes every draw
    assert LongTail(scale=0.02, seed=3).draw("k1") == pytest.approx(2 * a.draw("k1"))  # scale multiplies


@pytest.mark.parametrize("kw", [{"median_s": 8.0, "p95_s": 8.0}, {"median_s": 0.0}, {"scale": -1.0}])
def test_bad_settings_name_the_fix(kw):
    with pytest.raises(ValueError, match="LongTail"):
        LongTail(**kw)


def test_the_sdk_waits_the_drawn_latency(monkeypatch):
    import anthropic

    from fakes.fake_anthropic import FakeAnthropic

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    lt = LongTail(scale=0.005, key=lambda body: body["messages"][0]["content"])  # median 0.04 s
    keys = sorted((f"q{i}" for i in range(40)), key=lt.draw)
    fast, slow = keys[0], keys[-1]  # the shortest and the longest of 40 draws
    assert lt.draw(slow) > 3 * lt.draw(fast)
    with FakeAnthropic(latency_s=lt) as api:
        client = anthropic.Anthropic(base_url=api.base_url, api_key="test", max_retries=0)
        took = {}
        for k in (fast, slow):
            t0 = time.perf_counter()
            client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": k}])
            took[k] = time.perf_counter() - t0
    # lower bounds only: a loaded machine adds time, never removes the server's wait
    assert took[fast] >= lt.draw(fast) and took[slow] >= lt.draw(slow)
