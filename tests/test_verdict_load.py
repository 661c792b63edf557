"""Verdicts do not depend on machine load: the same apps checked on a quiet CPU and on one Chromium starves
``RATE`` times over (tasks/env/throttle.py) get the same check verdicts; the broken twin is still caught, so
the test cannot pass by making everything inconclusive. One browser per CPU speed for the module."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.checks import parse_check
from schemas.config.checks import ChecksConfig
from schemas.config.env import ProbeConfig, RuntimeConfig
from tasks.env.checks import CheckPlan
from tasks.env.throttle import ThrottledRuntime

FIX = Path(__file__).parent / "fixtures" / "checks"
CFG = RuntimeConfig(load_timeout_s=4.0, settle_s=0.2, hard_limit_s=8.0, concurrency=2, probe=ProbeConfig(enabled=False))
CHECKS = ChecksConfig()
RATE = 6  # the slowest renderer bench_checks --load-noise measured flipping verdicts before page time
pytestmark = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
QUIZ = parse_check((FIX / "quiz_accuracy_check.json").read_text())
APPS = {"quiz_fixed.html": "passed", "quiz_buggy.html": "failed"}


def verdicts(rt: ThrottledRuntime) -> dict[str, list[tuple[str, str]]]:
    names = sorted(APPS)
    evs = rt.check_many([(FIX / n).read_text() for n in names],
                        checks=[CheckPlan([("D12", QUIZ)], CHECKS) for _ in names])
    return {n: [(r["status"], r["reason"]) for r in ev.check_results] for n, ev in zip(names, evs)}


def test_a_starved_cpu_changes_no_check_verdict_and_the_broken_twin_is_still_caught():
    with ThrottledRuntime(CFG, rate=RATE) as rt:
        slow = verdicts(rt)
    assert {n: [s for s, _r in v] for n, v in slow.items()} == {n: [want] for n, want in APPS.items()}, slow


@pytest.mark.parametrize("wall_s, page_ms, want", [
    (1.6, 1550.0, "page"),  # quiet: the page had its time, the expectation's verdict stands
    (1.6, 400.0, None),  # starved: keep waiting for the page's time
    (1.6, None, None),  # no clock reading yet: keep waiting
    (1.4, 1500.0, None),  # the wall limit is never shortened
    (9.0, 400.0, "wall"),  # starved past max_slowdown: no verdict (inconclusive), never failed
    (9.0, None, "wall"),
])
def test_a_limit_is_page_time_with_a_wall_cap(wall_s, page_ms, want):
    from tasks.env.pagetime import limit_passed

    assert limit_passed(wall_s, page_ms, 1500, 6.0) == want
