"""The app session's typed step records (issue 40): the load step's reload-loop rule (pure), what a record keeps
in the app's evidence, and the load step's reads of the page within the starved-frame window."""
from __future__ import annotations

import asyncio

import pytest

from tasks.env.evidence import CheckRecord, LoadRecord, RuntimeEvidence
from tasks.env.navigation import count_refused_popups, reload_loop, self_navigations
from tasks.env.page import APP_URL
from tasks.env.pagetime import answer_window_s

SELF = {"kind": "navigation", "phase": "load", "url": APP_URL}


@pytest.mark.parametrize("attempts, routed, expected", [
    (2, 0, True),  # the page's own count
    (None, 2, True),  # it cannot count: the routed reloads stand in
    (1, 2, True),  # the routed ones are more: each was an attempt
    (1, 1, False),  # one reload is not a loop
    (0, 0, False),
    (None, 0, False),
])
def test_reload_loop_takes_the_larger_count(attempts, routed, expected):
    assert reload_loop([dict(SELF) for _ in range(routed)], 2, attempts) is expected


def test_a_routed_navigation_elsewhere_or_after_an_action_is_no_reload():
    away = [{**SELF, "url": "https://example.org/"}, {**SELF, "phase": "probe"}, {**SELF, "kind": "script"}] * 3
    assert reload_loop(away, 2, 0) is False


def test_a_record_is_kept_and_a_crash_a_listener_saw_stands():
    ev = RuntimeEvidence()
    ev.record(LoadRecord("blank", blank_body=True))
    assert (ev.status, ev.blank_body) == ("blank", True)
    crashed = RuntimeEvidence(status="crashed")
    crashed.record(LoadRecord("load_timeout"))
    assert crashed.status == "crashed"
    ev.record(CheckRecord([{"item_id": "a", "status": "passed"}], "why"))
    assert (ev.check_results, ev.checks_error) == ([{"item_id": "a", "status": "passed"}], "why")


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
