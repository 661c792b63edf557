"""The app session's typed step records (issue 40): the load step's reload-loop rule (pure), what a record keeps
in the app's evidence, and the load step's reads of the page within the starved-frame window."""
from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from tasks.env.evidence import CheckRecord, LoadRecord, RuntimeEvidence
from tasks.env.navigation import count_refused_popups, reload_loop, self_navigations
from tasks.env.page import APP_URL
from tasks.env.pagetime import answer_window_s
from tasks.env.records import BlockedRequest, CheckResult

SELF = BlockedRequest(APP_URL, "document", "navigation", "refused", "r", phase="load")


@pytest.mark.parametrize("attempts, routed, expected", [
    (2, 0, True),  # the page's own count
    (None, 2, True),  # it cannot count: the routed reloads stand in
    (1, 2, True),  # the routed ones are more: each was an attempt
    (1, 1, False),  # one reload is not a loop
    (0, 0, False),
    (None, 0, False),
])
def test_reload_loop_takes_the_larger_count(attempts, routed, expected):
    assert reload_loop([SELF] * routed, 2, attempts) is expected


@pytest.mark.parametrize("attempts, routed, expected", [
    (1, 1, True),  # the new document asked again (its own count; the let-through one is routed)
    (None, 2, True),  # it cannot count: a routed reload after the let-through one stands in
    (0, 1, False),  # the new document stayed: a guarded refresh
    (None, 1, False),
])
def test_after_the_one_reload_let_through_the_new_document_asking_again_is_a_loop(attempts, routed, expected):
    assert reload_loop([SELF] * routed, 2, attempts, reloaded=True) is expected


def test_a_routed_navigation_elsewhere_or_after_an_action_is_no_reload():
    away = [replace(SELF, url="https://example.org/"), replace(SELF, phase="probe"), replace(SELF, kind="request")] * 3
    assert reload_loop(away, 2, 0) is False


def test_a_record_is_kept_and_a_crash_a_listener_saw_stands():
    ev = RuntimeEvidence()
    ev.record(LoadRecord("blank", blank_body=True))
    assert (ev.status, ev.blank_body) == ("blank", True)
    crashed = RuntimeEvidence(status="crashed")
    crashed.record(LoadRecord("load_timeout"))
    assert crashed.status == "crashed"
    ev.record(CheckRecord([CheckResult("a", "passed")], "why"))
    assert (ev.check_results, ev.checks_error) == ([CheckResult("a", "passed")], "why")


class _StarvedPage:
    """A page whose main thread answers a read only after ``delay_s`` (a frame the machine's load starved)."""

    def __init__(self, delay_s: float, value: int) -> None:
        self.delay_s, self.value = delay_s, value

    async def evaluate(self, _js: str) -> int:
        await asyncio.sleep(self.delay_s)
        return self.value


def test_the_load_step_reads_a_starved_page_within_the_answer_window():
    # a starved page answering in 1.5 s still has its counts read (a fixed 1 s read lost them: the reload loop
    # then fell back to the routed count, which the load changes)
    window = answer_window_s(4)
    assert asyncio.run(self_navigations(_StarvedPage(1.5, 5), window)) == 5
    ev = RuntimeEvidence(refused_popups=3)
    asyncio.run(count_refused_popups(_StarvedPage(1.5, 40), ev, window))
    assert ev.refused_popups == 40
    assert asyncio.run(self_navigations(_StarvedPage(1.5, 5), 0.2)) is None  # past the window: no count


class LoadTimeout(Exception):
    """What Playwright raises when the load event does not come in time (its name says Timeout)."""


class _LoadingPage:
    """A page still loading: each read of its clock takes ``read_s`` of wall time (the machine starves it) and
    finds ``step_ms`` more lived; its load event fires at the ``loads_at``-th wait (never when 0)."""

    def __init__(self, read_s: float, step_ms: float, loads_at: int) -> None:
        self.read_s, self.step_ms, self.loads_at, self.lived, self.waits = read_s, step_ms, loads_at, 0.0, 0
        self.answered_at = 0.0

    async def evaluate(self, _js: str) -> float:
        await asyncio.sleep(self.read_s)
        self.lived += self.step_ms
        self.answered_at = asyncio.get_running_loop().time()
        return self.lived

    async def wait_for_load_state(self, _state: str, timeout: float) -> None:
        self.waits += 1
        if self.waits != self.loads_at:
            raise LoadTimeout(f"Timeout {timeout}ms exceeded")


def _still_loading(page: _LoadingPage) -> bool:
    from types import SimpleNamespace

    from schemas.config.env import RuntimeConfig
    from tasks.env.load import _still_loading as still_loading

    async def run() -> bool:
        # the session's deadline as hold.Hold keeps it for a page that answers: a little ahead of its last answer
        loop = asyncio.get_running_loop()
        page.answered_at = loop.time()
        return await still_loading(page, SimpleNamespace(when=lambda: page.answered_at + 2.2), RuntimeConfig())

    return asyncio.run(run())


def test_a_starved_page_still_loading_gets_its_own_time_and_one_that_lived_it_does_not():
    # 3 s of wall time for 0.3 s of its own: it loads (a wall bound of its own, the deadline less settle and probe,
    # gave load_timeout beside a bench while the session's deadline, held for a starved page, had time left)
    assert _still_loading(_LoadingPage(read_s=0.5, step_ms=50, loads_at=6)) is True
    # the twin lived the hard limit less settle and probe (10 - 0.5 - 1.5 s) on its own clock: no more waiting
    page = _LoadingPage(read_s=0.0, step_ms=1000, loads_at=0)
    assert _still_loading(page) is False and page.lived == 8000


def test_requests_blocked_at_one_moment_are_kept_in_one_order_whichever_reached_the_route_first():
    from tasks.env.navigation import record
    from tasks.env.probe import ProbeSession

    asked = [("https://api.example.com/counter", "fetch", "request"), ("http://203.0.113.7/pixel.gif", "image", "request"),
             ("wss://example.org/live", "websocket", "websocket")]
    kept = []
    for arrival in (asked, asked[::-1], asked[1:] + asked[:1]):
        ev, session = RuntimeEvidence(), ProbeSession()
        for url, rtype, kind in arrival:
            record(ev, session, url, rtype, kind, "refused", "r")
        session.started, session.current_action = True, 0
        record(ev, session, "https://api.example.com/late", "fetch", "request", "refused", "r")
        kept.append(ev.blocked_requests)
    assert kept[0] == kept[1] == kept[2]
    assert [b.url for b in kept[0]][-1] == "https://api.example.com/late"  # the probe's after the load's


def test_a_probe_cut_at_the_wall_time_cap_is_a_verdict_load_could_have_made():
    from tasks.env.probe_records import ProbeRecord

    cut = RuntimeEvidence(status="ok", interaction=ProbeRecord(status="ok", cut="wall"))
    assert cut.timed_out and cut.load_bound == "probe_cut"  # checked again alone in a batch
    whole = RuntimeEvidence(status="ok", interaction=ProbeRecord(status="ok"))
    assert not whole.timed_out and whole.load_bound is None
    assert RuntimeEvidence(status="ok", interaction=ProbeRecord(status="hung", cut="wall")).load_bound == "probe_hung"


def test_a_probe_that_left_the_clock_for_lag_is_a_verdict_load_could_have_made_and_one_that_left_for_its_own_code_is_not():
    # o3's Viviani app: alone 0.2 every time; beside 39 other apps at concurrency 8 its frames lagged past max_lag,
    # the probe ran on the page's clock, fewer actions ran and the failing one was missed (reward 1.0)
    from tasks.env.pagetime import lag_reason
    from tasks.env.probe_records import ProbeRecord

    lagged = RuntimeEvidence(status="ok", interaction=ProbeRecord(status="ok", clock="page", clock_reason=lag_reason(8)))
    assert lagged.timed_out and lagged.load_bound == "probe_lagged"  # checked again alone in a batch
    for why in ("busy waiting: the clock read 50000 times in one task", "a Worker (its timers are real)"):
        own = RuntimeEvidence(status="ok", interaction=ProbeRecord(status="ok", clock="page", clock_reason=why))
        assert not own.timed_out and own.load_bound is None
    assert RuntimeEvidence(status="ok", interaction=ProbeRecord(status="ok", clock="controlled")).load_bound is None
