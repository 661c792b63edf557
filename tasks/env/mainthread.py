"""A page's main thread by the CPU time it spends, so that "the page does not answer" is told on the page's own time.

A page answers a read (``pagetime.read``) once its main thread is free. A thread running a long handler stays busy
longer in wall time on a busy machine than on a quiet one, so a rule on wall time calls it hung for the machine's
load (two InteractScience apps with a handler of about 2 s were judged hung beside a trainer), and on a quiet one
by when in the session the task began. The CPU time the thread spends is its own: Chromium's ``Performance.getMetrics`` gives ``ThreadTime`` (the renderer main thread's
CPU time) and is answered in the middle of a running task (DevTools interrupts script). An endless loop is told once
it has spent its window on the CPU, on any machine, and a task shorter than that is waited for (``StillRunning``), up
to the hard limit's wall-time cap (``hold``), where a page the machine starved gets no verdict (a missing reward).

``Performance.enable`` is not answered while a task runs, so it is sent when the page opens (``open_page``), before
any script. A page without a meter (not opened here) is judged on wall time, as a quiet machine gives.
Measured (headless shell, an endless loop, ``ThreadTime`` over wall time): 0.96 quiet, 0.26 beside six busy processes.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, CDPSession, Page

THREAD_SHARE = 0.75  # a main thread that spent this share of a window on the CPU had that window (quiet: 0.96)
FIRST_LOOK_S = 0.05  # a read answered this fast costs no metering (most reads)

_METERS: WeakKeyDictionary[Any, CDPSession] = WeakKeyDictionary()
# page -> (thread CPU s, monotonic s) when it stopped answering: a wait spread over several reads counts as one
_STREAKS: WeakKeyDictionary[Any, tuple[float | None, float]] = WeakKeyDictionary()


class StillRunning(asyncio.TimeoutError):
    """The page has not answered within the wall time a read allowed, and its main thread has not yet spent its
    window of CPU time: a long task (on a renderer the machine starves, or not), not yet a hang. A caller that can
    wait longer does; one that cannot treats it as the TimeoutError it is."""


async def open_page(context: BrowserContext) -> Page:
    """A new page of ``context`` whose main thread's CPU time can be read (``thread_cpu_s``)."""
    page = await context.new_page()
    try:
        meter = await context.new_cdp_session(page)
        await meter.send("Performance.enable")
        _METERS[page] = meter
    except Exception:  # a browser without the protocol: wall time, as before
        pass
    return page


async def thread_cpu_s(page: Page, bound_s: float) -> float | None:
    """CPU seconds the page's main thread has run; None without a meter or an answer within ``bound_s`` (it
    comes between two of the thread's tasks or by interrupt: at once, unless the machine stopped the renderer)."""
    meter = _METERS.get(page)
    if meter is None:
        return None
    try:
        got = await asyncio.wait_for(meter.send("Performance.getMetrics"), bound_s)
    except Exception:
        return None
    return next((float(m["value"]) for m in got.get("metrics", []) if m.get("name") == "ThreadTime"), None)


def was_free(page: Page) -> None:
    """``page`` answered something (an evaluate ended): a wait for it that starts later starts a new streak."""
    _STREAKS.pop(page, None)


def hung(spent_cpu_s: float | None, waited_s: float, bound_s: float) -> bool:
    """Whether a page that has not answered for ``waited_s`` of wall time, its main thread running
    ``spent_cpu_s`` of CPU time meanwhile (None: unknown), had its window of ``bound_s``: the wall time, and its
    share of it on the CPU (pure)."""
    if waited_s < bound_s:
        return False
    return spent_cpu_s is None or spent_cpu_s >= THREAD_SHARE * bound_s


def starved(spent_cpu_s: float | None, waited_s: float) -> bool:
    """Whether the machine gave a main thread less than its share of ``waited_s`` of wall time in which it ran
    ``spent_cpu_s`` (pure); unknown is not starved."""
    return spent_cpu_s is not None and spent_cpu_s < THREAD_SHARE * waited_s


async def answer(page: Page, task: asyncio.Future[Any], bound_s: float, wall_s: float, meter_s: float) -> Any:
    """``task``'s result (an evaluate in ``page``). TimeoutError when the page, not answering since its streak
    began (this read or earlier ones), had ``bound_s`` of its own time (``hung``); ``StillRunning`` at ``wall_s``
    of wall time in this read before that (a TimeoutError, as every timeout is without a meter); a read of the
    meter takes at most ``meter_s`` more. The evaluate is cancelled either way."""
    loop = asyncio.get_running_loop()
    end = loop.time() + wall_s
    try:
        if (await asyncio.wait({task}, timeout=min(FIRST_LOOK_S, wall_s)))[0]:
            was_free(page)
            return task.result()
        cpu = await thread_cpu_s(page, meter_s)
        cpu0, wall0 = _STREAKS.setdefault(page, (cpu, time.monotonic()))
        while True:
            spent = None if cpu is None or cpu0 is None else cpu - cpu0
            waited = time.monotonic() - wall0
            if hung(spent, waited, bound_s):
                raise asyncio.TimeoutError
            left = end - loop.time()
            if left <= 0:
                raise asyncio.TimeoutError if spent is None else StillRunning
            need = max(bound_s - waited, THREAD_SHARE * bound_s - (spent or 0.0), FIRST_LOOK_S)
            if (await asyncio.wait({task}, timeout=min(left, need)))[0]:
                was_free(page)
                return task.result()
            # a meter that does not answer (a renderer the machine stopped) keeps its last reading: never hung for it
            now = await thread_cpu_s(page, meter_s) if cpu0 is not None else None
            cpu = now if now is not None else cpu
    finally:
        task.cancel()
