"""The load page's controlled clock (tasks/env/pagetime.py ``let_pass``) in real headless Chromium: a page
leaves it only when its own timers and frames are too heavy to run in real time, never because the scorer's
event loop was slow to come back to it (many apps scored at once, as the reward service does)."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from tasks.env.clock_install import install_controlled_clock
from tasks.env.pagetime import clock_of, let_pass

CFG = RuntimeConfig()
pytestmark = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
LIGHT = "<button onclick='this.textContent++'>0</button><script>setInterval(() => {}, 100)</script>"
# every frame runs about half a second of script: far more than max_lag times the 16 ms a frame has, on any machine
HEAVY = ("<canvas></canvas><script>const f = () => { let x = 0; for (let i = 0; i < 1.2e8; i++) x += Math.sqrt(i);"
         " requestAnimationFrame(f); }; requestAnimationFrame(f);</script>")

# a light animation whose third frame alone runs about two seconds of script: what a light page looks like from
# inside the renderer when the machine stops it once (another process had the core)
STALLED_ONCE = ("<canvas></canvas><script>let n = 0; const f = () => { if (++n === 3) { let x = 0;"
                " for (let i = 0; i < 5e8; i++) x += Math.sqrt(i); } requestAnimationFrame(f); };"
                " requestAnimationFrame(f);</script>")


async def _busy_loop(stop: asyncio.Event) -> None:
    """A scorer's event loop busy with other apps: each turn holds it for 0.1 s."""
    while not stop.is_set():
        time.sleep(0.1)
        await asyncio.sleep(0)


async def _clock_after_settle(html: str, busy: bool) -> tuple[str | None, str | None]:
    from playwright.async_api import async_playwright
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CFG.executable_path)
        try:
            context = await browser.new_context()
            await install_controlled_clock(context, CFG.clock)
            page = await context.new_page()
            await page.set_content(html)
            stop = asyncio.Event()
            noise = asyncio.ensure_future(_busy_loop(stop)) if busy else None
            await asyncio.sleep(0)
            await let_pass(page, 1000, CFG.clock)
            stop.set()
            if noise:
                await noise
            return await clock_of(page, 5.0)
        finally:
            await browser.close()


def test_a_light_page_keeps_the_controlled_clock_while_the_scorers_loop_is_busy():
    assert asyncio.run(_clock_after_settle(LIGHT, busy=True)) == ("controlled", None)


def test_a_page_whose_frames_cannot_run_in_real_time_leaves_for_its_own_clock():
    clock, why = asyncio.run(_clock_after_settle(HEAVY, busy=False))
    assert clock == "page" and f"took more than {CFG.clock.max_lag:g}x their page time" in why


def test_one_stalled_step_of_a_light_page_is_the_machines_and_keeps_the_controlled_clock():
    """A renderer the machine stops once (CI, its CPU throttled 8x beside training) lags in one step only; leaving
    on it changed a light page's frames, so its liveness evidence depended on the load."""
    assert asyncio.run(_clock_after_settle(STALLED_ONCE, busy=False)) == ("controlled", None)


async def _check_hook(hook: str) -> None:
    from playwright.async_api import async_playwright

    from tasks.env.clock_install import require_clock_hook
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CFG.executable_path)
        try:
            await require_clock_hook(browser, CFG.clock, hook)
        finally:
            await browser.close()


def test_the_clock_hook_page_time_reads_is_checked_at_start_and_its_absence_names_the_playwright():
    """Page time reads Playwright's private in-page clock; this release has it, and a release without it (here a
    hook of another name) stops the start with the installed version named, instead of real time in silence."""
    from importlib.metadata import version

    from tasks.env.clock_install import CLOCK_HOOK

    asyncio.run(_check_hook(CLOCK_HOOK))
    with pytest.raises(RuntimeError, match=f"Playwright {version('playwright')}'s clock has no globalThis.__pwClock2"):
        asyncio.run(_check_hook("globalThis.__pwClock2"))


def _frames(context_kind: str, draw: str, cancel: bool = False) -> str:
    """A canvas drawn every animation frame, each frame's timestamp and performance.now() kept."""
    return ("<canvas></canvas><script>window.stamps = []; const c = document.querySelector('canvas')"
            f".getContext('{context_kind}'); const f = (t) => {{ stamps.push([t, performance.now()]); {draw}; "
            "window.id = requestAnimationFrame(f); }; window.id = requestAnimationFrame(f);"
            + (" cancelAnimationFrame(window.id);" if cancel else "") + "</script>")


GL_FRAMES = _frames("webgl", "c.clearColor(0, 0, (t % 100) / 100, 1); c.clear(c.COLOR_BUFFER_BIT)")
CANVAS_FRAMES = _frames("2d", "c.fillRect(t % 300, 0, 10, 10)")


async def _stamps_after(html: str, ms: float) -> list[list[float]]:
    from playwright.async_api import async_playwright

    from tasks.env.launch import launch_args
    async with async_playwright() as pw:  # with the runtime's flags: WebGL on SwiftShader
        browser = await pw.chromium.launch(executable_path=CFG.executable_path, args=launch_args(CFG, "frames"))
        try:
            context = await browser.new_context()
            await install_controlled_clock(context, CFG.clock)
            page = await context.new_page()
            await page.set_content(html)
            await let_pass(page, ms, CFG.clock)
            assert await clock_of(page, 5.0) == ("controlled", None)
            return await page.evaluate("window.stamps")
        finally:
            await browser.close()


def test_a_webgl_page_gets_its_frames_on_the_coarser_grid_and_a_2d_canvas_every_frame():
    """WebGL draws in the GPU process, whose cost max_lag cannot see: its frames come every gl_frame_ms of page
    time, with timestamps on the page's performance clock; a 2D canvas (drawn in the renderer) keeps 60 a second."""
    step = CFG.clock.gl_frame_ms
    gl = asyncio.run(_stamps_after(GL_FRAMES, 1000))
    gaps = {round(b[0] - a[0]) for a, b in zip(gl, gl[1:])}
    assert gaps == {step} and abs(len(gl) - 1000 / step) <= 1, (gaps, len(gl))
    assert all(abs(t - now) < 1 for t, now in gl), gl[:3]  # the frame's time is the page's time
    flat = asyncio.run(_stamps_after(CANVAS_FRAMES, 1000))
    assert max(b[0] - a[0] for a, b in zip(flat, flat[1:])) <= 17 and len(flat) >= 55, len(flat)
    assert all(abs(t - now) < 1 for t, now in flat), flat[:3]


def test_a_webgl_frame_cancelled_does_not_run():
    assert asyncio.run(_stamps_after(_frames("webgl", "c.clear(c.COLOR_BUFFER_BIT)", cancel=True), 500)) == []
