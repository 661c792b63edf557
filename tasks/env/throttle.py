"""A browser runtime whose pages run on a starved CPU, to show that verdicts do not depend on machine load.

Chromium slows each page's main thread ``rate`` times (CDP ``Emulation.setCPUThrottlingRate``), the way a
busy machine does, but the same on every run: the regression tests (tests/test_verdict_load.py) and
``bench/bench_checks.py --load-noise`` check the same apps quiet and throttled and compare the verdicts.
Every page an app's context opens is throttled from its start: the load page (and the probe) and the
checks' pages. ``StarvedRenderers`` starves them for real instead (stopped part of the time, as other processes on
the cores leave them), which the emulation cannot show: a starved thread spends less CPU time, a slowed one does not.
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, cast

from tasks.env.runtime import BrowserRuntime

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page


class _ThrottledContext:
    """A browser context whose new pages are throttled before anything loads in them."""

    def __init__(self, context: BrowserContext, rate: float) -> None:
        object.__setattr__(self, "_context", context)
        object.__setattr__(self, "_rate", rate)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def new_page(self) -> Page:
        page = await self._context.new_page()
        cdp = await self._context.new_cdp_session(page)
        await cdp.send("Emulation.setCPUThrottlingRate", {"rate": self._rate})
        return page


class _ThrottledBrowser:
    def __init__(self, browser: Browser, rate: float) -> None:
        self._browser, self._rate = browser, rate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)

    async def new_context(self, **kw: Any) -> _ThrottledContext:
        return _ThrottledContext(await self._browser.new_context(**kw), self._rate)


class ThrottledRuntime(BrowserRuntime):
    """``BrowserRuntime`` whose every page runs ``rate`` times slower (1: not throttled)."""

    def __init__(self, *args: Any, rate: float = 1.0, **kw: Any) -> None:
        if rate < 1:
            raise ValueError(f"CPU throttling rate must be at least 1 (1 = not throttled); got {rate}")
        super().__init__(*args, **kw)
        self.rate = rate

    async def _session(self, browser: Browser, html: str, plan: Any) -> Any:
        # the wrapper stands in for the browser: it forwards all but new_context, which throttles the pages
        throttled = cast("Browser", _ThrottledBrowser(browser, self.rate)) if self.rate > 1 else browser
        return await super()._session(throttled, html, plan)


def renderer_pids(root: int | None = None) -> list[int]:
    """Chromium renderer processes (``--type=renderer``) below ``root`` (default: this process)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    kids: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], list(kids.get(os.getpid() if root is None else root, []))
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            if b"--type=renderer" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            continue
    return out


class StarvedRenderers:
    """A machine busy with other work, for the renderers only: every renderer below this process runs ``share`` of
    each ``period_s`` and is stopped (SIGSTOP) the rest. Unlike ``ThrottledRuntime`` (Chromium's emulation, whose
    renderer spends its CPU time slowed), a stopped renderer's main thread spends no CPU time while the wall time
    passes, as on a machine whose cores other processes hold: what the page's own time (``mainthread``) is for.
    ``with StarvedRenderers(0.25): ...`` around the browser's work; every renderer runs on when it ends."""

    def __init__(self, share: float, period_s: float = 0.1) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"a renderer's share of the CPU is in (0, 1]; got {share}")
        self.share, self.period_s = share, period_s
        self._stop, self._seen = threading.Event(), set[int]()
        self._thread = threading.Thread(target=self._run, name="starved-renderers", daemon=True)

    def _signal(self, pids: Iterable[int], sig: int) -> None:
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                self._seen.discard(pid)

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = renderer_pids()
            self._seen.update(pids)
            self._signal(pids, signal.SIGCONT)
            if self._stop.wait(self.share * self.period_s):
                break
            self._signal(pids, signal.SIGSTOP)
            self._stop.wait((1 - self.share) * self.period_s)
        self._signal(list(self._seen), signal.SIGCONT)

    def __enter__(self) -> "StarvedRenderers":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._signal(list(self._seen), signal.SIGCONT)
