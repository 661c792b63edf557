"""The pages the checks of one app run in: lanes, each a page of the app's context reused from check to check.

Each check gets a fresh document of the app; between two checks the page forgets the last one (its handlers
on the way out, its storage and name, the mouse and viewport it moved), and the page errors of a document go
to the check that opened it. The first lane may be the app's load page, which the runtime hands over once the
probe is done with it. Read by ``tasks/env/checks.py``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.env.mainthread import open_page
from tasks.env.pagetime import CLOCK_READ_S, PageTime, read, within
from tasks.env.records import PageError

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page, ViewportSize

# The clock as a check ended, and the page ready for the next one (one round trip).
_FORGET_JS = """() => { const T = window.__rrTime; if (!T) { try { sessionStorage.clear(); } catch (e) {} return null; }
  const s = T.state(); T.forget(); return s; }"""


class Lane:
    """One page of the app's context that runs checks one after another, each in a fresh document of the app (a
    new tab costs several times a reload); a page that stops answering is replaced."""

    def __init__(self, context: BrowserContext, html: str) -> None:
        self.context, self.html = context, html
        self.page: Page | None = None
        self.viewport: ViewportSize | None = None
        self.errors: list[PageError] = []  # page errors of the document on screen
        self.opening: list[PageError] = []  # of the next document the page commits (the running check's)
        self.pointer_moved = False

    def _watch(self, page: Page) -> None:
        self.page, self.viewport = page, page.viewport_size
        page.on("framenavigated", lambda f: setattr(self, "errors", self.opening) if f == page.main_frame else None)
        page.on("pageerror", lambda exc: self.errors.append(PageError.thrown(self.html, exc)))

    async def adopt(self, page: Page) -> None:
        """Run the checks in ``page``, the app's load page once the runtime is done with it (a new tab costs
        twice a reload): what the app and the probe left in it is forgotten as after a check."""
        self._watch(page)
        self.pointer_moved = True
        await self.forget()

    async def open(self, errors: list[PageError]) -> Page:
        self.opening = errors
        if self.page is None:
            self._watch(await open_page(self.context))
        assert self.page is not None  # _watch set it
        return self.page

    async def forget(self, t: PageTime | None = None) -> None:
        """Ready for the next check, or closed when the page does not answer; ``t`` gets the clock as the last
        check ended (read in the same round trip)."""
        page, self.opening = self.page, []
        try:
            assert page is not None  # the checks forget a page they opened (a failed assert closes, as before)
            state = await read(page, _FORGET_JS, CLOCK_READ_S)
            if t is not None:
                if not state:  # not a document of the app (its time keeper is gone): the page is not reused
                    raise ValueError("no time keeper")
                t.take(state)
            if self.viewport is not None and page.viewport_size != self.viewport:  # the runtime's contexts have one
                await page.set_viewport_size(self.viewport)
            if self.pointer_moved:
                await page.mouse.move(0, 0)
                self.pointer_moved = False
        except Exception:
            await self.close()

    async def close(self) -> None:
        if self.page is not None:
            page, self.page = self.page, None
            try:
                await within(page.close(), 5)
            except Exception:
                pass
