"""Page time: the library's clock, advanced by the environment, for every page of an app.

Every page of an app's context (the load page, the interaction probe, the checks) runs on Playwright's clock
(``context.clock``: ``Date``, timers, ``requestAnimationFrame``, ``requestIdleCallback``, ``performance.now``),
paused at a fixed instant (``env.runtime.clock.start``) from the document's start. Nothing in the page waits for
the machine: the settle time and a ``wait`` step advance the clock, polling an expectation advances it to the
next due timer (a poll interval at least), the probe's frame after an action is a frame of it, and timers and
animation frames fire as it advances, so a countdown of ten seconds is checked in milliseconds of wall time and
a starved renderer lives the same page time as a quiet one. Each page's clock is advanced on its own (its
in-page controller), so the checks of one app run side by side in pages of its context without moving each
other's time. ``pagetime.js`` (init script) reports errors in timer callbacks as the page's own, knows when each
timer is due (a page with nothing due before a limit is still: its verdict needs no more time) and which
real-time work is still running.

Where a page cannot run under the controlled clock it falls back to its own clock, recorded per check and per
probe (``clock``, ``clock_reason``): Web Audio time (``AudioContext.currentTime``), media playback, workers (their
timers are real), busy waiting (a page reading the clock in a tight loop would never see it move), and on the
load page timers and frames that take longer to run than their page time allows (``env.runtime.clock.max_lag``). Its
own clock is the time it lived on its real timers (a beat that does not count the time a starved renderer was
not running); every limit then reads that, and a page starved past ``max_slowdown`` makes the check
inconclusive. CSS animations and transitions and the Web Animations API run on the compositor's clock: they do
not force the fallback, but a verdict waits in wall time until the finite ones have finished (as for requests
in flight).

One slowdown rule: a limit on page time gets at most ``max_slowdown`` times itself in wall time; a page that lived
less than its limit by then was starved by the machine and gets no verdict (a missing reward, never a failure).
Two allowances, as what they bound differs: ``env.runtime.max_slowdown`` (4) caps an app's session (load, settle,
probe: ``Hold``), mostly on the controlled clock, so it needs little (a heavy canvas app needed 2.6x with the CPU
throttled 8x) while it holds a browser slot the batch waits for; ``env.checks.max_slowdown`` (12) bounds a check
step, whose real-time part (Playwright's waits before an action, requests, CSS animations) slows with the whole
machine (clicks timed out at 6 with the CPU throttled 8x, bench_checks --load-noise 8).

A read the page does not answer is told on its main thread's CPU time (``mainthread.py``: a long task is waited
for, on a busy machine too; an endless loop is hung once it spent its window), and the hard limit is held on both
clocks (``hold.py``).

Run: ``install_controlled_clock`` (clock_install.py) per context, ``let_pass(page, ms, clock)`` on the load page,
``t = PageTime(page, cfg, limit_ms)`` per check page: ``t.settle(ms)``, ``t.wait(ms)``, ``Limit(t, ms).step()``.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from schemas.config.checks import ChecksConfig, ClockConfig
from tasks.env.mainthread import StillRunning, answer, was_free

if TYPE_CHECKING:
    from playwright.async_api import Page

BEAT_MS = 20  # the page clock's beat: a gap longer than two beats counts as two (the renderer was starved)
CLOCK_READ_S = 2.0  # a page that cannot answer a one-line evaluate in this long is not living either
LOAD_STEP_MS = 50  # the load page's clock moves this far per step: a page too heavy to keep up is seen after two
LIVED_JS = "() => window.__rrTime ? window.__rrTime.lived() : null"
# What a limit says once it has passed (limit_passed, Limit.step): the page had its time, so a verdict may stand;
# or the machine starved it past max_slowdown, so there is none. Words of their own: "page" names a clock.
HAD_TIME, STARVED = "had_time", "starved"


class OutOfTime(Exception):
    """The check's own limit of page time is spent (no verdict on the item)."""


LAGGED = "its timers and frames took more than"  # how the reason a page left the controlled clock for lag starts


def lag_reason(max_lag: float) -> str:
    """Why a page left the controlled clock for lag (``T.pass``): what the machine's load can cause too."""
    return f"{LAGGED} {max_lag:g}x their page time to run"


async def let_pass(page: Page, ms: float, clock: ClockConfig) -> None:
    """Let ``ms`` of page time pass on a loaded page: its controlled clock advanced a step at a time in the page while
    its timers and frames take at most ``clock.max_lag`` times their page time (renderer time, over its steps less the
    slowest: one stall of a busy machine is not the page's); one that cannot, or on its own clock, gets wall time."""
    try:
        state = await page.evaluate("([ms, step, lag, why]) => window.__rrTime ? "
                                    "window.__rrTime.pass(ms, step, lag, why) : null",
                                    [ms, LOAD_STEP_MS, clock.max_lag, lag_reason(clock.max_lag)])
    except Exception:  # the document went (replaced, crashed): what follows looks at the page as it is
        state = None
    done = float(state["done"]) if state else 0.0
    await asyncio.sleep(max(ms - done, 0.0) / 1000)


POLL_S = 0.05  # how often a wait for the machine (a request, the route) looks again


async def within(aw: Any, bound_s: float) -> Any:
    """``aw``'s result, or TimeoutError after ``bound_s`` of wall time: the one bound on what the machine does (a
    context or a browser closing) and on a read a page must answer at once (``read``). Every wait of the
    environment is one of this module's, so which clock it runs on is said here."""
    return await asyncio.wait_for(aw, bound_s)


class BrowserGone(Exception):
    """The browser process died while the environment waited on it (``before_gone``)."""


async def before_gone(aw: Any, gone: asyncio.Future[None]) -> Any:
    """``aw``'s result, or BrowserGone as soon as ``gone`` (the browser's disconnect) comes first: Playwright leaves
    a page or context that was opening as the browser died unanswered, which held the app to its hard limit (30 s
    of a roomy limit in test_env_browser's crash test) before it was loaded again in a new browser. No clock: it
    waits on the machine's process."""
    task = asyncio.ensure_future(aw)
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        raise BrowserGone("the browser disconnected")
    finally:
        task.cancel()


async def read(page: Page, js: str, bound_s: float, arg: Any = None, wall_s: float | None = None) -> Any:
    """What ``js`` returns in ``page``, or TimeoutError when its main thread does not answer within ``bound_s`` of
    its own time (``mainthread.answer``: the wall time, and its share of it on the CPU; ``answer_window_s``: a
    starved frame answers within it, an endless loop does not). ``StillRunning``, a TimeoutError, when ``wall_s``
    (default ``bound_s``) of wall time passed first with the thread starved: a caller that can wait longer does."""
    task = asyncio.ensure_future(page.evaluate(js) if arg is None else page.evaluate(js, arg))
    return await answer(page, task, bound_s, bound_s if wall_s is None else wall_s, CLOCK_READ_S)


async def answered(page: Page, aw: Any, first_s: float, answer_s: float, deadline: Any = None) -> Any:
    """The result of ``aw`` (an evaluate on ``page``) once it comes: after ``first_s``, and again after each
    ``first_s`` more, the page's main thread is asked for its clock, and the wait goes on while it answers within
    ``answer_s`` of its own time (``mainthread``: a long task, or a renderer the machine starves, is waited for).
    TimeoutError when it does not answer, told before ``deadline()`` (the session's hard limit, loop time) ends it,
    so the hang keeps the action that caused it."""
    task, loop = asyncio.ensure_future(aw), asyncio.get_running_loop()
    try:
        while not (await asyncio.wait({task}, timeout=first_s))[0]:
            # the hang told with ``first_s`` still left before the hard limit, for what follows it in the session
            left = deadline() - loop.time() - first_s if deadline else answer_s
            try:
                lived = await lived_ms(page, answer_s, max(0.1, min(answer_s, left)))
            except StillRunning:  # a long task, not yet a hang: the hard limit (``hold``) bounds the wait
                continue
            if lived is None:
                raise asyncio.TimeoutError
        was_free(page)
        return task.result()
    finally:
        task.cancel()


async def until(done: Any, bound_s: float) -> bool:
    """Wait in wall time, at most ``bound_s``, until ``done()`` (what the machine does: the route answering a
    navigation, a document loading); True when it came. Not a wait of the page's: its clock stays as it is."""
    end = time.monotonic() + bound_s
    while not done():
        if time.monotonic() >= end:
            return False
        await asyncio.sleep(POLL_S)
    return True


async def scripts_ran(page: Page, bound_s: float) -> bool:
    """Wait in wall time, at most ``bound_s``, until every script the page asked for after load has run or failed
    (its fetch is the machine's time, not the page's: under load a library can still be arriving when page time
    says the page has settled, and a user acts after the page's scripts ran). True when there was one to wait for,
    so the caller lets the page time after it that a user would give it."""
    js = "() => window.__rrTime && window.__rrTime.scriptsLoading ? window.__rrTime.scriptsLoading() : 0"
    end, waited = time.monotonic() + bound_s, False
    while time.monotonic() < end:
        try:
            if not await read(page, js, max(end - time.monotonic(), 0.1)):
                return waited
        except Exception:  # a page that does not answer is judged by the steps after this one
            return waited
        waited = True
        await asyncio.sleep(POLL_S)
    return waited


def answer_window_s(max_slowdown: float) -> float:
    """How long a page's main thread may take to answer a read before it counts as not answering (an endless loop):
    a read's time on a renderer starved ``max_slowdown`` times over (env.runtime.max_slowdown)."""
    return CLOCK_READ_S * max_slowdown


async def clock_of(page: Page, timeout_s: float) -> tuple[str | None, str | None]:
    """(controlled | page, why the page left the controlled clock) of a page as it is now; (None, None) when it
    does not answer within ``timeout_s``."""
    try:
        why = await read(page, "() => window.__rrTime ? window.__rrTime.fallback : 'no time keeper'", timeout_s)
    except Exception:
        return None, None
    return ("controlled" if why is None else "page"), why


async def lived_ms(page: Page, bound_s: float, wall_s: float) -> float | None:
    """The page's own clock (ms it lived on its real timers); None when it does not answer within ``bound_s`` of
    its own time (``read``) or has none; ``StillRunning`` while it runs a task short of that past ``wall_s``."""
    try:
        v = await read(page, LIVED_JS, bound_s, wall_s=wall_s)
    except StillRunning:
        raise
    except Exception:
        return None
    return float(v) if isinstance(v, (int, float)) else None


async def page_clock_ms(page: Page, timeout_s: float = CLOCK_READ_S) -> float | None:
    """``lived_ms`` within ``timeout_s``; None also while the page runs a task."""
    try:
        return await lived_ms(page, timeout_s, timeout_s)
    except StillRunning:
        return None


def limit_passed(wall_s: float, page_ms: float | None, limit_ms: float, max_slowdown: float) -> str | None:
    """Whether a limit of ``limit_ms`` page time has passed after ``wall_s`` seconds in which the page's clock
    advanced ``page_ms`` (None: unknown): None (not yet), ``HAD_TIME`` (a verdict may stand) or ``STARVED`` (the
    page ran slower than ``max_slowdown`` allows: no verdict) (pure)."""
    if wall_s * 1000 < limit_ms:
        return None
    if page_ms is not None and page_ms >= limit_ms:
        return HAD_TIME
    return STARVED if wall_s * 1000 >= limit_ms * max_slowdown else None


class Stopwatch:
    """Wall and page-clock time since it started, for one limit in one page (the fallback's clock)."""

    def __init__(self, page: Page, limit_ms: float, max_slowdown: float) -> None:
        self.page, self.limit_ms, self.max_slowdown = page, limit_ms, max_slowdown
        self.wall0 = time.monotonic()
        self.page0: float | None = None
        self.page_ms = 0.0  # page-clock time since the start, as last read

    async def start(self) -> "Stopwatch":
        self.wall0, self.page0 = time.monotonic(), await page_clock_ms(self.page)
        return self

    async def passed(self) -> str | None:
        wall = time.monotonic() - self.wall0
        now = await page_clock_ms(self.page)
        if now is None or self.page0 is None:
            return limit_passed(wall, None, self.limit_ms, self.max_slowdown)
        # a clock behind its start belongs to a new document (the app reloaded itself): count from that start
        self.page_ms = now - self.page0 if now >= self.page0 else now
        return limit_passed(wall, self.page_ms, self.limit_ms, self.max_slowdown)


class PageTime:
    """One check page's time: controlled until the page shows it cannot run under it (``fallback``)."""

    def __init__(self, page: Page, cfg: ChecksConfig, limit_ms: float) -> None:
        self.page, self.cfg, self.limit_ms = page, cfg, limit_ms
        self._state: dict[str, Any] = {"ticks": 0.0, "mutations": 0, "next_due": None, "real_work": 0,
                                       "fallback": None, "lived": 0.0}
        self._base = 0.0  # page time of the documents before this one (an app that reloads itself starts at 0)
        # After a fallback: page time on the controlled clock before it, and the page-clock time the check let pass
        # since (its waits and polls, not the time a starved page took to load, act or answer a read)
        self._controlled_ms, self._waited_ms = 0.0, 0.0

    @property
    def state(self) -> dict[str, Any]:
        """The page's time as last read (``take``)."""
        return self._state

    def take(self, new: dict[str, Any]) -> dict[str, Any]:
        """Keep a reading of the page's time keeper (``pagetime.js``'s ``state()``): a fall back to the page's own
        clock keeps the controlled time it had, and a clock behind the last reading belongs to a new document (the
        app reloaded itself), whose time counts on from the documents before."""
        old = self._state.get("ticks") or 0.0
        if self.controlled and new.get("fallback") is not None:
            self._controlled_ms = self.ticks  # as last read on the controlled clock: it runs in real time from here
        if (new.get("ticks") or 0.0) < old:
            self._base += old
        self._state = new
        return new

    @property
    def controlled(self) -> bool:
        return self._state.get("fallback") is None

    @property
    def fallback(self) -> str | None:
        return self._state.get("fallback")

    @property
    def ticks(self) -> float:
        """Page time on the controlled clock since the check's page opened (across its documents)."""
        return self._base + float(self._state.get("ticks") or 0.0)

    def _due(self) -> float | None:
        due = self._state.get("next_due")
        return None if due is None else self._base + float(due)

    def used_ms(self) -> float:
        """Page time the check used: the controlled clock's, and after a fallback the time it let pass on the
        page's own clock, so a limit is spent by the same steps on a quiet or a starved machine."""
        return self.ticks if self.controlled else self._controlled_ms + self._waited_ms

    def used_s(self) -> float:
        return self.used_ms() / 1000

    async def waited(self, watch: Stopwatch) -> str | None:
        """``watch.passed()``, the page-clock time since its last reading counted as time the check let pass."""
        before = watch.page_ms
        passed = await watch.passed()
        self._waited_ms += max(watch.page_ms - before, 0.0)
        return passed

    async def look(self) -> dict[str, Any]:
        return self.take(await self.page.evaluate("() => window.__rrTime.state()"))

    async def advance(self, ms: float) -> None:
        """Move the controlled clock ``ms`` on (timers and frames fire); past the check's limit: OutOfTime."""
        over = self.ticks + ms > self.limit_ms
        self.take(await self.page.evaluate("(ms) => window.__rrTime.advance(ms)",
                                           max(self.limit_ms - self.ticks, 0) if over else ms))
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
        while not await self.waited(watch):
            await asyncio.sleep(self.cfg.poll_ms / 1000)

    async def after_action(self) -> None:
        """One poll interval of page time after an action (its timers of 0 ms, its next frame); on the page's
        own clock that time passes anyway while the next step starts."""
        if self.controlled:
            await self.advance(self.cfg.poll_ms)

    def still_until(self, end: float) -> bool:
        """Nothing on the controlled clock is due before ``end``: until then the page cannot change by itself."""
        due = self._due()
        return due is None or due > end

    async def step_toward(self, end: float, gap_ms: float | None = None) -> None:
        """One poll interval on (``gap_ms`` when given), or straight to the next timer when that is later
        (nothing can change before it), never past ``end``."""
        due = self._due()
        gap = max(gap_ms or self.cfg.poll_ms, (due - self.ticks) if due is not None else 0.0)
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


    async def outlive(self, task: asyncio.Future, limit_s: float, wall_cap_s: float) -> Any:
        """Await ``task`` (a check whose controlled clock keeps its own limit) up to ``wall_cap_s`` while the page
        lives (its own clock advances; two readings in a row that do not mean it stopped);
        on the page's own clock, past ``limit_s`` of wall time it goes on while the time the check let pass on that
        clock (``PageTime.used_ms``) is short of the limit. Else it is cancelled and OutOfTime raised."""
        wall0, last, misses, wait_s = time.monotonic(), -1.0, 0, min(limit_s, wall_cap_s)
        while True:
            done, _ = await asyncio.wait({task}, timeout=max(wait_s, 0.05))
            if done:
                return task.result()
            wall = time.monotonic() - wall0
            # a page on the controlled clock that answers at all is alive, however slowly a starved machine runs it
            now = await page_clock_ms(self.page, CLOCK_READ_S * (self.cfg.max_slowdown if self.controlled else 1))
            misses = misses + 1 if now is None or now <= last else 0
            why = (f"wall limit of {wall_cap_s:g}s reached" if wall >= wall_cap_s else
                   "the page stopped answering" if misses >= 2 else
                   None if self.controlled or limit_passed(wall, self.used_ms(), limit_s * 1000, self.cfg.max_slowdown) is None
                   else f"check time limit of {limit_s:g}s (page time) reached")
            if why is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise OutOfTime(why)
            last = now if now is not None else last
            wait_s = min(1.0 if self.controlled else max((limit_s * 1000 - self.used_ms()) / 1000, 0.5), wall_cap_s - wall)


class Limit:
    """``limit_ms`` of page time from now, for one step; ``step()`` lets time pass toward it."""

    def __init__(self, t: PageTime, limit_ms: float) -> None:
        self.t, self.limit_ms = t, limit_ms
        self.start: float | None = None
        self.watch: Stopwatch | None = None
        self.real_deadline: float | None = None
        self.why = ""  # when step() said STARVED: why the page did not have its time

    async def step(self, gap_ms: float | None = None) -> str | None:
        """None: time passed (look again); ``HAD_TIME``: the limit passed and the page had its time (a verdict
        may stand); ``STARVED``: it did not (machine load, real-time work that never finished): no verdict."""
        t = self.t
        if t.controlled:
            if self.start is None:
                await t.look()
                self.start = t.ticks
            end = self.start + self.limit_ms
            if t.ticks < end and not t.still_until(end):
                await t.step_toward(end, gap_ms)
                return None
            if t.controlled:  # the limit passed, or the page is still until it does
                if not t.state.get("real_work"):
                    return HAD_TIME
                if self.real_deadline is None:
                    self.real_deadline = time.monotonic() + self.limit_ms * t.cfg.max_slowdown / 1000
                if not await t.finish_real_work(self.real_deadline):
                    self.why = "real-time work (requests, CSS animations) still running"
                    return STARVED
                if not t.still_until(t.ticks + t.cfg.poll_ms):  # what the finished work set going (a render)
                    await t.advance(t.cfg.poll_ms)
                return None
        if self.watch is None:  # the page left the controlled clock: the rest of the limit on its own clock
            spent = t.ticks - self.start if self.start is not None else 0.0
            self.watch = await Stopwatch(t.page, max(self.limit_ms - spent, 0.0), t.cfg.max_slowdown).start()
        passed = await t.waited(self.watch)
        if passed is None:
            await asyncio.sleep(t.cfg.poll_ms / 1000)
        self.why = f"the page ran more than {t.cfg.max_slowdown:g}x slower than its clock allows (machine load)"
        return passed
