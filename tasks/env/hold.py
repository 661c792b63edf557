"""An app session's hard limit, held on the page's own clocks: the time it lived on its real timers
(``pagetime``) and the CPU time its main thread ran (``mainthread``), so a page the machine starves is not stopped
for the machine's load and an endless loop still is."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tasks.env.mainthread import THREAD_SHARE, StillRunning, starved, thread_cpu_s
from tasks.env import pagetime
from tasks.env.pagetime import LIVED_JS, answer_window_s, read

if TYPE_CHECKING:
    from playwright.async_api import Page


def hard_limit(limit_s: float) -> "asyncio.Timeout":
    """An app session's hard limit: ``limit_s`` of wall time from now, which ``Hold`` then moves while
    the page lives short of it on its own clock (a starved page is not stopped for the machine's load)."""
    return asyncio.timeout(limit_s)


HOLD_ENDS = {  # why the hard limit stopped an app (the hold's outcome), named in the app's timeout error
    "no_answer": "the page did not answer a read of its clock",
    "lived": "the page lived the limit on its own clock",
    "wall_cap": "the wall-time cap (max_slowdown times the limit) was reached",
    "starved": "the machine starved the page: its main thread ran less than %d%% of the wall time, no verdict"
               % round(THREAD_SHARE * 100),
    "late": "the deadline came while the page ran a task short of its window (the machine's timing), no verdict",
}
LAST_READ_S = 0.25  # a read of the hold ends this long before the deadline, to say why it stands
NO_VERDICT_ENDS = ("starved", "late")  # hold ends that leave the app unjudged (a missing reward, never a failure)


class Hold:
    """An app's hard limit on its load page's own clock (the time it lived on its real timers), so a page the load
    starves is not stopped for it. Before the wall deadline of ``limit`` (an asyncio timeout) the page's clock is
    read: a page that lived ``limit_s`` is stopped now; one that answers and lived less gets the rest, up to
    ``max_slowdown`` times ``limit_s`` of wall time; one that does not answer within ``answer_window_s`` of its own
    time (``mainthread``: an endless loop) is stopped at the deadline, one busy and starved by the machine gets more
    wall time; one with no clock yet is read again. At the cap, a page whose main thread ran less than
    ``THREAD_SHARE`` of the wall time was starved (``starved``: no verdict), one that ran more was slow itself. ``run`` goes beside the session; ``end``
    (a key of ``HOLD_ENDS``) says why it let the deadline stand, ``no_answer`` while a read is unanswered, so a late
    event loop that cancels the hold first does not change why a hung page stopped."""

    def __init__(self, limit: Any, page: Page, limit_s: float, max_slowdown: float, told_s: float = 0.0) -> None:
        self.limit, self.page, self.limit_s, self.max_slowdown = limit, page, limit_s, max_slowdown
        self.told_s = told_s  # how late past its window the probe may tell a hang (its poll: ``hang_grace_s``)
        self.end = ""

    def why(self) -> str:  # the words of ``end`` for the app's timeout error
        return HOLD_ENDS.get(self.end, "")

    async def run(self) -> str:
        limit, loop = self.limit, asyncio.get_running_loop()
        read_s = answer_window_s(self.max_slowdown)
        cap, margin = loop.time() + self.limit_s * self.max_slowdown, read_s + 0.5  # time to read before the deadline
        cpu0, t0 = await thread_cpu_s(self.page, pagetime.CLOCK_READ_S), loop.time()
        while True:
            ahead = limit.when() - margin - loop.time()
            if ahead > 0:
                await asyncio.sleep(ahead)  # the deadline of wall time, not a wait of the page's
                continue
            if limit.when() >= cap:
                cpu = await thread_cpu_s(self.page, pagetime.CLOCK_READ_S)
                spent = None if cpu is None or cpu0 is None else cpu - cpu0
                self.end = "starved" if starved(spent, loop.time() - t0) else "wall_cap"
                break
            self.end = "no_answer"  # until it answers: the deadline may cancel this read before its own bound
            running = False
            try:
                # answered before the deadline (its last meter read included), or the deadline stands (the hold may
                # start late, after the page opened); a window of its own time longer than the probe's
                # (``answered``) by the time it may take to tell it, so a hang in an action is told there
                lived = await read(self.page, LIVED_JS, read_s + self.told_s + LAST_READ_S, wall_s=max(
                    0.1, min(read_s, limit.when() - loop.time() - LAST_READ_S - pagetime.CLOCK_READ_S)))
            except StillRunning:  # a long task, not yet a hang (often a renderer the machine starves): more wall time
                lived, running = None, True
            except asyncio.TimeoutError:  # hung: stopped as a deadline that stood, not at one a long task moved on
                if not limit.expired():
                    limit.reschedule(min(limit.when(), loop.time() + LAST_READ_S))
                return self.end
            except Exception:  # no document to ask yet (navigating): ask again
                lived = None
            if limit.expired():  # the read ended past the deadline (a late event loop): why it stopped stands
                self.end = "late" if running else self.end
                break
            self.end = ""
            if running:
                limit.reschedule(min(loop.time() + margin, cap))
                continue
            if lived is None:
                await asyncio.sleep(pagetime.CLOCK_READ_S / 10)
                continue
            if lived >= self.limit_s * 1000:
                limit.reschedule(loop.time())
                self.end = "lived"
                break
            limit.reschedule(min(loop.time() + self.limit_s - lived / 1000 + margin, cap))
        return self.end
