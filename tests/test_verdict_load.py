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
from tasks.env.hold import HOLD_ENDS, Hold
from tasks.env.throttle import ThrottledRuntime

FIX = Path(__file__).parent / "fixtures" / "checks"
CFG = RuntimeConfig(concurrency=2, probe=ProbeConfig(enabled=False))
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
    return {n: [(r.status, r.reason) for r in ev.check_results] for n, ev in zip(names, evs)}


def test_a_starved_cpu_changes_no_check_verdict_and_the_broken_twin_is_still_caught():
    with ThrottledRuntime(CFG, rate=RATE) as rt:
        slow = verdicts(rt)
    assert {n: [s for s, _r in v] for n, v in slow.items()} == {n: [want] for n, want in APPS.items()}, slow


@pytest.mark.parametrize("wall_s, page_ms, want", [
    (1.6, 1550.0, "had_time"),  # quiet: the page had its time, the expectation's verdict stands
    (1.6, 400.0, None),  # starved: keep waiting for the page's time
    (1.6, None, None),  # no clock reading yet: keep waiting
    (1.4, 1500.0, None),  # the wall limit is never shortened
    (9.0, 400.0, "starved"),  # starved past max_slowdown: no verdict (inconclusive), never failed
    (9.0, None, "starved"),
])
def test_a_limit_is_page_time_with_a_wall_cap(wall_s, page_ms, want):
    from tasks.env.pagetime import limit_passed

    assert limit_passed(wall_s, page_ms, 1500, 6.0) == want


HEAVY = (Path(__file__).parent / "fixtures" / "env" / "heavy" / "particles.html").read_text()
# the same app, whose main thread stops answering once it has loaded: still stopped at the wall hard limit
HEAVY_HUNG = HEAVY.replace("requestAnimationFrame(frame);\n</script>",
                           "requestAnimationFrame(frame);\n"
                           "addEventListener('load', () => setTimeout(() => { for (;;) {} }));\n</script>")

# an app whose load event waits on twelve parser-blocking scripts of real work (about 0.2 s each quiet): starved
# RATE times over it loads after the load timeout and most of the hard limit in wall time, while answering between
# them (eight of 0.3 s each once went unanswered past the answer window on CI, one script starved past 8 s)
SLOW_PARSE = ("<html><body><h1>slow</h1>" + "<script>{let x = 0; for (let i = 0; i < 2e7; i++) x += Math.sqrt(i);"
              " window.s = x;}</script>\n" * 12 + "<p>done</p><button onclick=\"this.textContent='on'\">go</button>"
              "</body></html>")


def test_a_heavy_canvas_app_starved_by_the_machine_is_not_stopped_by_the_hard_limit_and_a_hung_twin_is():
    """24,000 particles drawn per frame (about a three.js scene on a software renderer) are valid alone on a quiet
    machine; starved ``RATE`` times over they used to run into the hard limit (``unresponsive``, a runtime-invalid
    verdict that was the machine's load), and so did a load slowed by its scripts' work (``load_timeout``). The hard
    limit and the load's time count the page's own time, so both keep their verdicts, and the twin whose main
    thread stops answering is still stopped at the wall limit."""
    cfg = RuntimeConfig(concurrency=3, recheck_timeouts=False)  # the default limits and probe; no second chance
    with ThrottledRuntime(cfg, rate=RATE) as rt:
        heavy, hung, slow = rt.check_many([HEAVY, HEAVY_HUNG, SLOW_PARSE])
    assert slow.status == "ok" and slow.duration_s > cfg.load_timeout_s, (slow.status, slow.duration_s, slow.page_errors)
    assert heavy.status == "ok" and heavy.runtime_valid(cfg) is True, (heavy.status, heavy.page_errors)
    assert heavy.interaction is not None and heavy.interaction.status == "ok", heavy.interaction
    assert hung.status == "unresponsive" and hung.runtime_valid(cfg) is False, (hung.status, hung.interaction)
    assert HOLD_ENDS["no_answer"] in hung.page_errors[-1].message, hung.page_errors


class _Page:
    """A load page as the hold sees it: ``evaluate`` answers the clock's reading (``lived(wall seconds)``) after
    ``delay_s``, or never (``None``: an endless loop)."""

    def __init__(self, lived, delay_s: float | None = 0.0) -> None:
        self.lived, self.delay_s, self.reads = lived, delay_s, 0

    async def evaluate(self, _js: str):
        import asyncio

        self.reads += 1
        if self.delay_s is None:
            await asyncio.Event().wait()
        await asyncio.sleep(self.delay_s)
        return self.lived(asyncio.get_running_loop().time() - self.t0)


def _held(monkeypatch, page: "_Page", cpu_share: float | None = None, late_s: float = 0.0,
          finish: bool = False) -> tuple[str | None, float]:
    """One session under ``hold.Hold`` with times scaled down (limit 0.5 s, cap 6x, a clock read of 0.05 s): why
    the hold let its deadline stand and how long the session lasted. ``cpu_share``: the page's main thread runs
    that share of the wall time (``mainthread.thread_cpu_s``; None: no meter). ``late_s``: the hold starts that
    late; ``finish``: the hold runs to its end after the deadline instead of being cancelled there."""
    import asyncio

    from tasks.env import hold as hold_mod
    from tasks.env import mainthread, pagetime

    monkeypatch.setattr(pagetime, "CLOCK_READ_S", 0.05)

    async def session() -> tuple[str | None, float]:
        loop = asyncio.get_running_loop()
        page.t0 = loop.time()
        if cpu_share is not None:
            async def cpu_s(_page, _bound_s) -> float:
                return cpu_share * (loop.time() - page.t0)
            monkeypatch.setattr(mainthread, "thread_cpu_s", cpu_s)
            monkeypatch.setattr(hold_mod, "thread_cpu_s", cpu_s)
        try:
            async with asyncio.timeout(0.5) as limit:
                await asyncio.sleep(late_s)
                hold = Hold(limit, page, 0.5, 6.0)
                holding = asyncio.ensure_future(hold.run())
                await asyncio.sleep(30)  # a session that would outlive any limit
        except TimeoutError:
            pass
        took = loop.time() - page.t0
        if finish:
            await asyncio.wait_for(holding, 5)
        holding.cancel()
        return hold.end or None, took

    return asyncio.run(session())


@pytest.mark.parametrize("lived, delay_s, want_end, want_s", [
    (lambda t: t * 1000, 0.0, "lived", 0.5),  # quiet: stopped when it lived the limit, as on the wall
    (lambda t: t * 250, 0.0, "lived", 2.0),  # starved 4x but answering: gets the time it did not have
    (lambda t: t * 250, 0.15, "lived", 2.0),  # a frame starved past one clock read is still answering
    (lambda t: t * 100, 0.0, "wall_cap", 3.0),  # starved 10x: never past max_slowdown times the limit
    (lambda t: t * 1000, None, "no_answer", 0.5),  # an endless loop: stopped at the wall deadline
    (lambda t: None if t < 0.2 else t * 250, 0.0, "lived", 2.0),  # no clock before its document starts: read again
])
def test_the_hard_limit_holds_on_the_page_clock_up_to_its_wall_cap(monkeypatch, lived, delay_s, want_end, want_s):
    """hold.Hold (``_held``): how long the session lasts and why the hold let its deadline stand."""
    end, took = _held(monkeypatch, _Page(lived, delay_s))
    assert end == want_end and want_s - 0.1 < took < want_s + 0.4, (end, took)

def test_a_hung_page_whose_read_the_deadline_cancels_first_still_stopped_for_no_answer(monkeypatch):
    """A loop late by more than the hold's margin (the machine's load) lets the session's deadline cancel the hold
    while its read of the clock is still unanswered: why the app stopped is the same, ``no_answer``."""
    end, _took = _held(monkeypatch, _Page(lambda t: t * 1000, None), late_s=0.45)
    assert HOLD_ENDS[end] == HOLD_ENDS["no_answer"]

@pytest.mark.parametrize("cpu_share, delay_s, want_end, want_s", [
    (0.1, 0.0, "starved", 3.0),  # living 10x slow, its main thread ran a tenth of the time: the machine's, no verdict
    (1.0, 0.0, "wall_cap", 3.0),  # living 10x slow while its main thread ran all the time: the app's own weight
    (0.1, None, "starved", 3.0),  # no answer, its thread starved 10x: more wall time up to the cap, then no verdict
    (0.2, None, "no_answer", 2.1),  # starved 5x: it spends its window of CPU time (0.41 s) before the cap: hung
    # no answer, its thread running all the time: an endless loop, stopped once it spent the hold's window of its
    # own time (the answer window and the last read's margin, 0.55 s here; with a probe, its poll as well)
    (1.0, None, "no_answer", 0.6),
])
def test_the_hold_tells_a_page_the_machine_starves_from_one_slow_itself_by_its_main_threads_time(
        monkeypatch, cpu_share, delay_s, want_end, want_s):
    """hold.Hold (``_held``), the page's main thread running ``cpu_share`` of the wall time (its CPU time as
    ``mainthread.thread_cpu_s`` reads it)."""
    end, took = _held(monkeypatch, _Page(lambda t: t * 100, delay_s), cpu_share=cpu_share)
    assert end == want_end and want_s - 0.1 < took < want_s + 0.4, (end, took)

@pytest.mark.parametrize("spent, waited, bound, hung, starved", [
    (7.7, 8.0, 8.0, True, False),  # quiet: an endless loop had its window (0.96 of the wall time measured)
    (2.0, 8.0, 8.0, False, True),  # starved 4x: a quarter of the window on the CPU, waited for
    (6.0, 24.0, 8.0, True, True),  # starved 4x for longer: it spent its window on the CPU, hung at last
    (7.9, 7.9, 8.0, False, False),  # never before the wall time of the window
    (None, 8.0, 8.0, True, False),  # no meter: wall time, as a quiet machine gives
    (None, 2.0, 8.0, False, False),
])
def test_a_page_not_answering_is_hung_when_its_main_thread_had_its_window(spent, waited, bound, hung, starved):
    from tasks.env import mainthread

    assert (mainthread.hung(spent, waited, bound), mainthread.starved(spent, waited)) == (hung, starved)


# a handler of about 4 s of CPU time (a long computation, e.g. a big lattice): valid; its twin never ends
LONG_HANDLER = ("<!DOCTYPE html><html><body><p id=out>0</p><button id=go>Compute</button><script>"
                "document.getElementById('go').addEventListener('click', () => { let s = 0;"
                " for (let k = 0; k < 4; k++) for (let i = 0; i < 3e8; i++) s += Math.sqrt(i);"
                " document.getElementById('out').textContent = String(s); });</script></body></html>")
ENDLESS_HANDLER = LONG_HANDLER.replace("k < 4", "k >= 0")


def test_a_long_handler_on_a_renderer_the_machine_starves_is_not_hung_and_an_endless_one_is():
    """The renderers stopped half the time (``StarvedRenderers``: the machine's cores held by other work, not
    Chromium's emulation, whose renderer spends its CPU time slowed): the long handler takes past the answer window
    in wall time (judged hung while the window was wall time), but its main thread spends less than its window of
    CPU time, so it is waited for; the endless one spends its window and is hung, in the action that started it.
    Half, not less: a suite's other worker may starve it twice over, and the endless one must spend its window
    before the hard limit's wall-time cap (there a starved page gets no verdict)."""
    from tasks.env.throttle import StarvedRenderers

    cfg = RuntimeConfig(concurrency=2, recheck_timeouts=False)
    with ThrottledRuntime(cfg, rate=1) as rt, StarvedRenderers(0.5):
        long, endless = rt.check_many([LONG_HANDLER, ENDLESS_HANDLER])
    assert long.interaction is not None and endless.interaction is not None
    assert (long.status, long.interaction.status, long.runtime_valid(cfg)) == ("ok", "ok", True), long.interaction
    assert endless.interaction.status == "hung" and endless.runtime_valid(cfg) is False, endless.interaction
    assert endless.interaction.hang is not None and endless.interaction.hang.label == "Compute"


def test_a_hold_whose_read_of_a_long_task_ends_past_the_deadline_says_so_and_gives_no_verdict(monkeypatch):
    """The hold starts late (a busy event loop) and its read of a page running a long task on a starved thread
    ends after the session's deadline: the deadline can no longer move (asyncio refuses to reschedule an expired
    timeout, which crashed the hold), so the hold ends ``late``, an end with no verdict, not ``no_answer``."""
    from tasks.env.hold import NO_VERDICT_ENDS

    end, _took = _held(monkeypatch, _Page(lambda t: t * 1000, None), cpu_share=0.2, late_s=0.45, finish=True)
    assert end == "late" and end in NO_VERDICT_ENDS
