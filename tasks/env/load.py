"""The app's load step (``BrowserRuntime._session``'s first): load the app, let the settle time pass on its clock,
and read the page as loaded, into a ``LoadRecord``.

A load that passes ``load_timeout_s`` while the page's main thread answers is busy, not hung, and may go on (on the
page's own clock, within the session's hard limit). A user acts once the scripts the page asked for have run, so
the step waits for them (``pagetime.scripts_ran``). A reload the page asks for at load is let through once
(``navigation.let_reload_through``): its new document settles as the first did and is asked whether it reloads
again (``navigation.reload_loop``).
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from schemas.config.env import RuntimeConfig
from tasks.env.evidence import LoadRecord, RuntimeEvidence
from tasks.env.navigation import count_refused_popups, reload_loop, self_navigations
from tasks.env.page import APP_URL, BLANK_JS
from tasks.env.mainthread import StillRunning
from tasks.env.pagetime import answer_window_s, let_pass, lived_ms, read, scripts_ran, until
from tasks.env.probe import ProbeSession, idle_sample

if TYPE_CHECKING:
    from playwright.async_api import Page


async def load_app(page: Page, ev: RuntimeEvidence, session: ProbeSession, limit: Any,
                   cfg: RuntimeConfig) -> LoadRecord:
    """Load the app (``limit``: the session's hard limit), let the settle time pass (page time; the probe's idle
    liveness sampled across it) and read the page as loaded: a reload loop, a blank body, errors at load."""
    try:
        await page.goto(APP_URL, wait_until="load", timeout=cfg.load_timeout_s * 1000)
    except Exception as e:
        if "Timeout" not in type(e).__name__ and "Timeout" not in str(e):
            raise
        if not await _still_loading(page, limit, cfg):
            return LoadRecord("load_timeout")
    session.loaded = True
    probe, sampled_s = cfg.probe, 0.0
    if probe.enabled:
        await let_pass(page, probe.liveness_start_s * 1000, cfg.clock)
        session.idle, sampled_s = await idle_sample(page, probe), probe.liveness_start_s
    await let_pass(page, (cfg.settle_time_s() - sampled_s) * 1000, cfg.clock)
    if await scripts_ran(page, session.answer_s):  # a user acts once the page's scripts ran: they start on its clock
        await let_pass(page, cfg.settle_time_s() * 1000, cfg.clock)
    reloads = await _reloads(page, session, cfg)
    await count_refused_popups(page, ev, session.answer_s)
    if ev.status != "ok":  # a failure a listener saw (a crash) stands
        return LoadRecord(ev.status)
    if reload_loop(ev.blocked_requests, cfg.reload_loop_after, reloads, session.reloaded):
        return LoadRecord("reload_loop")
    budget = max(cfg.hard_limit_s - cfg.load_timeout_s - cfg.settle_time_s(), 1.0)
    while True:
        try:
            blank = bool(await read(page, BLANK_JS, budget))
            break
        except StillRunning:  # a long task (a starved one): not yet a hang, the hold bounds the wait
            continue
        except asyncio.TimeoutError:
            return LoadRecord("unresponsive")  # e.g. an infinite loop started by a timer after load
    status = "page_error" if ev.page_errors else "blank" if blank else "ok"
    return LoadRecord(status, blank_body=blank)

async def _reloads(page: Page, session: ProbeSession, cfg: RuntimeConfig) -> int | None:
    """The page's own count of its reloads after load. A page that asked for one is loaded again, as a browser
    does (``navigation.let_reload_through``): its new document settles as the first did, and its count is the
    one read (None while it is still loading: the routed reloads decide)."""
    reloads = await self_navigations(page, session.answer_s)
    if reloads and not session.reloaded:
        await until(lambda: session.reloaded, session.answer_s)
    if not session.reloaded:
        return reloads
    if not await until(lambda: session.new_documents > 0, session.answer_s):
        return None
    await let_pass(page, cfg.settle_time_s() * 1000, cfg.clock)
    return await self_navigations(page, session.answer_s)


async def _still_loading(page: Page, limit: Any, cfg: RuntimeConfig) -> bool:
    """Past the load timeout: a page whose main thread still answers is busy, not hung. It may fire its load
    event until it has lived the hard limit less the settle and probe time on its own clock. No wall bound of
    its own: the session's deadline (``limit``, which ``Hold`` moves for a page the machine starves,
    up to its wall cap) ends it, and a read of the page's clock ends with it, as the hold's does; True when the
    page loaded."""
    probe, loop = cfg.probe, asyncio.get_running_loop()
    reserve = cfg.settle_time_s() + (probe.budget_s if probe.enabled else 0.0)
    while True:
        # the heartbeat, and the page's own time: an answer within the window a starved frame needs
        window = answer_window_s(cfg.max_slowdown)
        try:
            lived = await lived_ms(page, window, max(0.1, min(window, limit.when() - loop.time() - 0.25)))
        except StillRunning:  # a long parser-blocking script (a starved one): the hold gives it more wall time
            continue
        if lived is None or lived / 1000 >= cfg.hard_limit_s - reserve:
            return False
        try:
            await page.wait_for_load_state("load", timeout=1000)
            return True
        except Exception as e:
            if "Timeout" not in type(e).__name__ and "Timeout" not in str(e):
                return False
