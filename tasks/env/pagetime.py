"""Page time for the executable checks: the library's clock, advanced by the environment.

Every check page runs on Playwright's clock (``context.clock``: ``Date``, timers, ``requestAnimationFrame``,
``requestIdleCallback``, ``performance.now``), paused at a fixed instant (``ChecksConfig.clock_start``) from
the document's start. Nothing in the page waits for the machine: a ``wait`` step advances the clock, polling
an expectation advances it a poll interval at a time, and timers and animation frames fire as it advances,
so a countdown of ten seconds is checked in milliseconds of wall time and a starved renderer lives the same
page time as a quiet one. The clock is advanced per page (its in-page controller), so the checks of one app
run side by side in pages of its context without moving each other's time. ``pagetime.js`` (init script)
reports errors in timer callbacks as the page's own, knows when each timer is due (a page with nothing due
before a limit is still: its verdict needs no more time) and which real-time work is still running.

Where a page cannot run under the controlled clock it falls back to its own clock, recorded per check
(``PageTime.fallback``): Web Audio time (``AudioContext.currentTime``), media playback, workers (their timers
are real), and busy waiting (a page reading the clock in a tight loop would never see it move). Its own clock
is the time it lived on its real timers (a beat that does not count the time a starved renderer was not
running); every limit then reads that, and a page starved past ``max_slowdown`` makes the check inconclusive.
CSS animations and transitions and the Web Animations API run on the compositor's clock: they do not force the
fallback, but a verdict waits in wall time until the finite ones have finished (as for requests in flight).

Run: ``await install_controlled_clock(context, cfg)`` once per context, then per page
``t = PageTime(page, cfg, limit_ms)`` and ``await t.wait(ms)``, ``Limit(t, ms).step()``, ``await t.settle(ms)``.
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from schemas.config_checks import ChecksConfig

TIME_JS = Path(__file__).with_name("pagetime.js").read_text(encoding="utf-8")
BEAT_MS = 20  # the page clock's beat: a gap longer than two beats counts as two (the renderer was starved)
CLOCK_READ_S = 2.0  # a page that cannot answer a one-line evaluate in this long is not living either


class OutOfTime(Exception):
    """The check's own limit of page time is spent (no verdict on the item)."""


def time_script(cfg: ChecksConfig) -> str:
    """The check pages' time keeper (``pagetime.js``) with its settings."""
    return TIME_JS + "(" + json.dumps({"beat_ms": BEAT_MS, "busy_reads": cfg.busy_reads}) + ");"


async def install_controlled_clock(context: Any, cfg: ChecksConfig) -> None:
    """Pages opened in ``context`` from now on start paused at ``cfg.clock_start`` with the time keeper."""
    await context.clock.pause_at(cfg.clock_start)
    await context.add_init_script(time_script(cfg))


async def page_clock_ms(page: Any) -> float | None:
    """The page's own clock (ms it lived on its real timers); None when it does not answer or has none."""
    try:
        v = await asyncio.wait_for(page.evaluate("() => window.__rrTime ? window.__rrTime.lived() : null"),
                                   CLOCK_READ_S)
    except Exception:
        return None
    return float(v) if isinstance(v, (int, float)) else None


def limit_passed(wall_s: float, page_ms: float | None, limit_ms: float, max_slowdown: float) -> str | None:
    """Whether a limit of ``limit_ms`` page time has passed after ``wall_s`` seconds in which the page's clock
    advanced ``page_ms`` (None: unknown): None (not yet), "page" (the page had its time: a verdict may stand)
    or "wall" (the page ran slower than ``max_slowdown`` allows: no verdict) (pure)."""
    if wall_s * 1000 < limit_ms:
        return None
    if page_ms is not None and page_ms >= limit_ms:
        return "page"
    return "wall" if wall_s * 1000 >= limit_ms * max_slowdown else None


class Stopwatch:
    """Wall and page-clock time since it started, for one limit in one page (the fallback's clock)."""

    def __init__(self, page: Any, limit_ms: float, max_slowdown: float) -> None:
        self.page, self.limit_ms, self.max_slowdown = page, limit_ms, max_slowdown
        self.wall0, self.page0 = time.monotonic(), None

    async def start(self) -> "Stopwatch":
        self.wall0, self.page0 = time.monotonic(), await page_clock_ms(self.page)
        return self

    async def passed(self) -> str | None:
        wall = time.monotonic() - self.wall0
        if wall * 1000 < self.limit_ms:  # the clock is read only once the wall limit is reached
            return None
        now = await page_clock_ms(self.page)
        # a clock behind its start belongs to a new document (the app reloaded itself): count from that start
        page = None if now is None or self.page0 is None else now - self.page0 if now >= self.page0 else now
        return limit_passed(wall, page, self.limit_ms, self.max_slowdown)


class PageTime:
    """One check page's time: controlled until the page shows it cannot run under it (``fallback``)."""

    def __init__(self, page: Any, cfg: ChecksConfig, limit_ms: float) -> None:
        self.page, self.cfg, self.limit_ms = page, cfg, limit_ms
        self.state: dict[str, Any] = {"ticks": 0.0, "mutations": 0, "next_due": None, "real_work": 0,
                                      "fallback": None, "lived": 0.0}

    @property
    def controlled(self) -> bool:
        return self.state.get("fallback") is None

    @property
    def fallback(self) -> str | None:
        return self.state.get("fallback")

    @property
    def ticks(self) -> float:
        return float(self.state.get("ticks") or 0.0)

    def used_s(self) -> float:
        """Page time the check used: the controlled clock's, or the page's own after a fallback."""
        return (self.ticks if self.controlled else float(self.state.get("lived") or 0.0)) / 1000

    async def look(self) -> dict[str, Any]:
        self.state = await self.page.evaluate("() => window.__rrTime.state()")
        return self.state

    async def advance(self, ms: float) -> None:
        """Move the controlled clock ``ms`` on (timers and frames fire); past the check's limit: OutOfTime."""
        over = self.ticks + ms > self.limit_ms
        self.state = await self.page.evaluate("(ms) => window.__rrTime.advance(ms)", max(self.limit_ms - self.ticks, 0)
                                              if over else ms)
        if over and self.controlled:
            raise OutOfTime(f"check time limit of {self.limit_ms / 1000:g}s (page time) reached")

    async def wait(self, ms: float) -> None:
        """Let ``ms`` of page time pass (on the page's own clock a starved page gets more wall time, up to
        ``max_slowdown`` times)."""
        if self.controlled:
            await self.advance(ms)
            return
        watch = await Stopwatch(self.page, ms, self.cfg.max_slowdown).start()
        await asyncio.sleep(ms / 1000)
        while not await watch.passed():
            await asyncio.sleep(self.cfg.poll_ms / 1000)

    async def after_action(self) -> None:
        """One poll interval of page time after an action (its timers of 0 ms, its next frame); on the page's
        own clock that time passes anyway while the next step starts."""
        if self.controlled:
            await self.advance(self.cfg.poll_ms)

    def still_until(self, end: float) -> bool:
        """Nothing on the controlled clock is due before ``end``: until then the page cannot change by itself."""
        due = self.state.get("next_due")
        return due is None or due > end

    async def step_toward(self, end: float) -> None:
        """One poll interval on, or straight to the next timer when that is later (nothing can change before
        it), never past ``end``."""
        due = self.state.get("next_due")
        gap = max(self.cfg.poll_ms, (due - self.ticks) if due is not None else 0.0)
        await self.advance(min(gap, end - self.ticks))

    async def settle(self, cap_ms: float) -> None:
        """After load: until a poll interval passes with no DOM change (or nothing is due), at most ``cap_ms``,
        then the real-time work still running; on the page's own clock a fixed ``cap_ms``."""
        if not self.controlled:
            await self.wait(cap_ms)
            return
        await self.look()
        end = self.ticks + cap_ms
        while self.controlled and self.ticks < end and not self.still_until(end):
            before = self.state["mutations"]
            await self.step_toward(end)
            if self.state["mutations"] == before:
                break
        await self.finish_real_work(time.monotonic() + cap_ms * self.cfg.max_slowdown / 1000)

    async def finish_real_work(self, deadline: float) -> bool:
        """Wait in wall time, until ``deadline`` (``time.monotonic()``) at most, for requests, loading images and
        scripts and finite CSS / Web animations; True when none is left."""
        while self.state.get("real_work"):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(self.cfg.poll_ms / 1000 / 2)
            await self.look()
        return True


class Limit:
    """``limit_ms`` of page time from now, for one step; ``step()`` lets time pass toward it."""

    def __init__(self, t: PageTime, limit_ms: float) -> None:
        self.t, self.limit_ms = t, limit_ms
        self.start: float | None = None
        self.watch: Stopwatch | None = None
        self.real_deadline: float | None = None
        self.why = ""  # when step() said "wall": why the page did not have its time

    async def step(self) -> str | None:
        """None: time passed (look again); "page": the limit passed and the page had its time (a verdict may
        stand); "wall": it did not (machine load, real-time work that never finished): no verdict."""
        t = self.t
        if t.controlled:
            if self.start is None:
                await t.look()
                self.start = t.ticks
            end = self.start + self.limit_ms
            if t.ticks < end and not t.still_until(end):
                await t.step_toward(end)
                return None
            if t.controlled:  # the limit passed, or the page is still until it does
                if not t.state.get("real_work"):
                    return "page"
                if self.real_deadline is None:
                    self.real_deadline = time.monotonic() + self.limit_ms * t.cfg.max_slowdown / 1000
                if not await t.finish_real_work(self.real_deadline):
                    self.why = "real-time work (requests, CSS animations) still running"
                    return "wall"
                if not t.still_until(t.ticks + t.cfg.poll_ms):  # what the finished work set going (a render)
                    await t.advance(t.cfg.poll_ms)
                return None
        if self.watch is None:  # the page left the controlled clock: the rest of the limit on its own clock
            spent = t.ticks - self.start if self.start is not None else 0.0
            self.watch = await Stopwatch(t.page, max(self.limit_ms - spent, 0.0), t.cfg.max_slowdown).start()
        passed = await self.watch.passed()
        if passed is None:
            await asyncio.sleep(t.cfg.poll_ms / 1000)
        self.why = f"the page ran more than {t.cfg.max_slowdown:g}x slower than its clock allows (machine load)"
        return passed
