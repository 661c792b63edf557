"""A browser runtime whose pages run on a starved CPU, to show that verdicts do not depend on machine load.

Chromium slows each page's main thread ``rate`` times (CDP ``Emulation.setCPUThrottlingRate``), the way a
busy machine does, but the same on every run: the regression tests (tests/test_verdict_load.py) and
``bench/bench_checks.py --load-noise`` check the same apps quiet and throttled and compare the verdicts.
Every page an app's context opens is throttled from its start: the load page (and the probe) and the
checks' pages.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

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
