"""The controlled clock installed in an app's context (``tasks.env.pagetime`` keeps its time from then on): every page
the context opens starts paused at ``env.runtime.clock.start`` with the time keeper (``pagetime.js``), and every
browser start checks that the library's in-page clock the keeper reads is there.

Run: ``await require_clock_hook(browser, clock)`` once per runtime, ``await install_controlled_clock(context,
clock)`` once per context before its first page.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from schemas.config.checks import ClockConfig
from tasks.env.pagetime import BEAT_MS

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext

TIME_JS = Path(__file__).with_name("pagetime.js").read_text(encoding="utf-8")
# Playwright's clock exposes no public way to read a page's pending timers or to advance one page alone: page time
# (pagetime.js, probe.js) reads the library's in-page object. It is private, so every browser start checks it is
# there (require_clock_hook) instead of letting every page fall back to real time in silence.
CLOCK_HOOK = "globalThis.__pwClock"


def time_script(clock: ClockConfig) -> str:
    """The pages' time keeper (``pagetime.js``) with its settings."""
    return TIME_JS + "(" + json.dumps({"beat_ms": BEAT_MS, "busy_reads": clock.busy_reads,
                                    "gl_frame_ms": clock.gl_frame_ms}) + ");"


async def install_controlled_clock(context: BrowserContext, clock: ClockConfig) -> None:
    """Every page ``context`` opens from now on starts paused at ``clock.start``, with the time keeper. Before
    any other init script, so the probe's and the environment's own waits keep the real timers."""
    await context.clock.pause_at(clock.start)
    await context.add_init_script(time_script(clock))


async def require_clock_hook(browser: Browser, clock: ClockConfig, hook: str = CLOCK_HOOK) -> None:
    """Raise, naming the installed Playwright, when a page under ``context.clock`` has no ``hook`` (its
    controller and the saved real timers): page time cannot be kept, and no verdict may silently run on the
    machine's time instead."""
    from importlib.metadata import version

    context = await browser.new_context()
    try:
        await context.clock.pause_at(clock.start)
        page = await context.new_page()
        await page.route("**/*", lambda route: route.fulfill(body="<!DOCTYPE html><p>clock</p>", content_type="text/html"))
        await page.goto("http://clock-check.rubricrl.test/")
        found = await page.evaluate(f"() => !!({hook} && {hook}.controller && {hook}.builtins)")
    finally:
        await context.close()
    if not found:
        raise RuntimeError(f"Playwright {version('playwright')}'s clock has no {hook} (controller, builtins) in its "
                           "pages: rubricrl's page time (tasks/env/pagetime.js, probe.js) reads it, so no app can be "
                           "judged on the controlled clock. Install the pinned playwright (pyproject.toml) or port "
                           "pagetime.js to this release.")
