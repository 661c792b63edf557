"""Runtime validity evidence (paper 3.3, stage 3) from loading the app in real headless Chromium.

Beyond the paper, whose judge only simulates execution: the page is loaded by Playwright in Debian's
``chromium-headless-shell`` (Chromium's old headless mode, the build Playwright itself launches for
headless runs; full ``chromium --headless`` costs about 3x the CPU per app) and we record uncaught page errors, console errors, a load timeout, a page that
stops responding, a renderer crash and a blank body, during load and a short settle time.

Sandbox, per app: a fresh browser context (own renderer process, no shared storage); the page is
served from a fake origin by a route, so every other request goes through ``context.route``
(``tasks.env.navigation``): served from the CDN mirror (``tasks.env.cdn``, the exact version a URL names, by its
server in the browser's network namespace, ``tasks.env.mirror_serve``),
answered 404 where the real CDN would, or refused, and recorded with its outcome; WebSockets are
caught by ``route_web_socket`` and closed; service workers are blocked; DNS resolves nothing
(``--host-resolver-rules``) as a second wall; file URLs are cross-origin to the app. A hard wall
limit holds whatever the page does (an infinite loop included): the context is closed (its renderer
killed) and the batch goes on. One browser is reused across apps; a crashed browser is detected and
relaunched without losing the batch. WebGL runs on SwiftShader (software), so three.js apps work.

Every page of the app's context runs on the environment's controlled clock (``tasks.env.pagetime``, the library's
clock paused at ``env.runtime.clock.start``): the settle time, the probe's frames and the checks' waits are page
time, advanced by the environment, so they cost no wall time and do not stretch or shrink with machine load; a
page that cannot run under it (busy waiting, Web Audio or media time, workers, frames heavier than the machine
runs in real time) runs on its own clock from then on, as a browser would.

After load and settle, the interaction probe (``tasks.env.probe``) uses the app in the same
context: its evidence lands in ``RuntimeEvidence.interaction``; navigation away is answered 204 by the
route (the page stays) and recorded; a popup no gesture opened is refused as a browser refuses it, and a
page that keeps reloading itself is ``reload_loop`` (``tasks.env.navigation``). An app that fails after a
library request the mirror could not serve gets no verdict (``RuntimeEvidence.environment_gaps``).
Last, an app given a ``CheckPlan`` (``check_many(htmls, checks=[...])``) has its executable rubric checks run in
fresh pages of the same context (``tasks.env.checks``). ``BrowserRuntime._session`` is that sequence, in order.

Screenshots (evaluation only, ``tasks.env.shots``; ``BrowserRuntime(cfg, screenshots=ScreenshotSpec(...))``):
one PNG of the viewport after load and settle, before the probe acts (``<app key>-load.png``), and one
after the probe (``<app key>-probe.png``), named by ``app_key(html)``; ``shots[app key]`` says which were
kept or why not. The time a screenshot takes is added to the app's hard limit, so taking one never
changes a verdict; without a spec nothing is taken (training never pays for it).

Verdicts must not depend on machine load or concurrency: the hard limit, and a load's time past ``load_timeout_s``
while its main thread answers (busy is not hung), are counted on the page's own clock, so a page the machine
starves gets the time it did not have, up to ``max_slowdown`` times the limit (``hold.Hold``); an
app that still timed out or hung beside others is checked again alone before its verdict stands.

Playwright's async API runs on a private event loop in a background thread, so callers on any thread
(Prefect workers) get a plain blocking API: ``BrowserRuntime(cfg).check_many(htmls)``.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
import time
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from schemas.config.env import RuntimeConfig
from tasks.env.capture import answer_dialog, record_console
from tasks.env.cdn import CdnMirror, configured_mirror
from tasks.env.checks import CheckPlan, error_reason, run_checks
from tasks.env.evidence import CHECKED, CheckRecord, RuntimeEvidence
from tasks.env.launch import ServedFiles, launch_args, sandbox_launch
from tasks.env.load import load_app
from tasks.env.navigation import (POPUP_JS, SELF_NAVIGATIONS_JS, block_websocket, on_popup,
                                  on_request_failed, route_request)
from tasks.env.page import stack_offset
from tasks.env.clock_install import install_controlled_clock, require_clock_hook
from tasks.env.hold import NO_VERDICT_ENDS, Hold, hard_limit
from tasks.env.mainthread import open_page
from tasks.env.pagetime import answer_window_s, before_gone, within
from tasks.env.probe import DIALOGS_JS, PROBE_JS, ProbeSession, run_probe
from tasks.env.records import PageError
from tasks.env.shots import ScreenshotSpec, take_screenshot

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright, ViewportSize

log = logging.getLogger("rubricrl.env")
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
CRASHED_BESIDE_OTHERS = ("the page crashed beside other work and not when checked again alone: the machine's "
                         "memory or CPU pressure, not the app (no verdict)")


class BrowserRuntime:
    """One browser reused across apps, a fresh context per app, checks run ``cfg.concurrency`` at a time."""

    def __init__(self, cfg: RuntimeConfig | None = None, mirror: CdnMirror | None = None,
                 screenshots: ScreenshotSpec | None = None) -> None:
        self.cfg = cfg or RuntimeConfig()
        self.screenshots = screenshots
        self.shots: dict[str, dict[str, str]] = {}  # app key -> {"load": file name} or {"load_error": why}, "probe"
        if not Path(self.cfg.executable_path).exists():
            raise ValueError(f"no browser at {self.cfg.executable_path}; install it (scripts/setup-system.sh, or "
                             "apt-get install -y chromium-headless-shell) "
                             "or run with --no-browser / env.runtime.enabled=false")
        self.mirror = mirror or configured_mirror(self.cfg)
        self.served = ServedFiles() if self.mirror is not None else None
        # a machine that cannot isolate the browser fails here
        self._launch_opts = sandbox_launch(self.cfg, self.served)
        self.marker = uuid.uuid4().hex[:12]
        self.restarts = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rubricrl-browser", daemon=True)
        self._thread.start()
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._gone: asyncio.Future[None] | None = None  # set when self._browser disconnects (before_gone)
        self._clock_checked = False
        self._launch_lock: asyncio.Lock | None = None
        self._sem: asyncio.Semaphore | None = None
        self._busy = 0  # apps being checked now (at most cfg.concurrency)
        self._closed = False

    # -- public, blocking -------------------------------------------------------------------------
    def check(self, html: str) -> RuntimeEvidence:
        return self.check_many([html])[0]

    def check_many(self, htmls: list[str], checks: list[CheckPlan | None] | None = None) -> list[RuntimeEvidence]:
        """Load (and probe) each app; results in input order. Never raises for an app's behaviour.
        ``checks[i]`` (optional): app i's executable rubric checks, run last in its session."""
        return [f.result() for f in self.check_each(htmls, checks)]

    def check_each(self, htmls: list[str], checks: list[CheckPlan | None] | None = None) -> list[Future]:
        """``check_many`` without waiting: one future per app, resolved as soon as that app's verdict stands, so
        a caller can judge an app while the others still load (the same verdicts, in any order of completion)."""
        if self._closed:
            raise RuntimeError("BrowserRuntime is closed; create a new one")
        if checks is not None and len(checks) != len(htmls):
            raise ValueError(f"check_many got {len(checks)} check plans for {len(htmls)} apps; pass one per app "
                             "(None for an app without checks) or none")
        futures: list[Future] = [Future() for _ in htmls]
        asyncio.run_coroutine_threadsafe(self._check_all(htmls, checks, futures), self._loop)
        return futures

    @property
    def busy(self) -> int:
        """Apps in a session right now (at most ``cfg.concurrency``)."""
        return self._busy

    def browser_pids(self) -> list[int]:
        """PIDs of this runtime's browser process (not its renderers), found by the launch marker."""
        pids = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"--rubricrl-runtime={self.marker}".encode() in cmd and not any(c.startswith(b"--type=") for c in cmd):
                pids.append(int(d.name))
        return pids

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            if self.served is not None:
                self.served.close()

    def __enter__(self) -> "BrowserRuntime":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- event-loop side --------------------------------------------------------------------------
    async def _shutdown(self) -> None:
        if self._browser is not None:
            try:
                await within(self._browser.close(), 10)
            except Exception:  # a dead browser cannot be closed twice; the driver stops below
                pass
        if self._pw is not None:
            await self._pw.stop()

    async def _ensure_browser(self) -> Browser:
        if self._launch_lock is None:
            self._launch_lock, self._sem = asyncio.Lock(), asyncio.Semaphore(self.cfg.concurrency)
        async with self._launch_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._pw is None:
                from playwright.async_api import async_playwright

                self._pw = await async_playwright().start()
            if self._browser is not None:  # crashed or killed: relaunch, the batch goes on
                self.restarts += 1
                try:
                    await within(self._browser.close(), 5)
                except Exception:  # already gone
                    pass
            self._browser = await self._pw.chromium.launch(
                headless=True, args=launch_args(self.cfg, self.marker, self.served), **self._launch_opts)
            gone = self._gone = asyncio.get_running_loop().create_future()

            def disconnected(_b: Browser) -> None:
                if not gone.done():
                    gone.set_result(None)
            self._browser.on("disconnected", disconnected)
            if not self._clock_checked:  # once per runtime: the same Playwright serves every relaunch
                await require_clock_hook(self._browser, self.cfg.clock)
                self._clock_checked = True
            return self._browser

    async def _check_all(self, htmls: list[str], checks: list[CheckPlan | None] | None, futures: list[Future]) -> None:
        try:
            await self._ensure_browser()
        except BaseException as e:  # the caller sees the launch failure, as before
            for f in futures:
                f.set_exception(e)
            return
        plans = checks if checks is not None else [None] * len(htmls)
        first_pass = asyncio.Event()
        pending = [len(htmls)]
        alone = asyncio.Lock()

        async def one(i: int) -> RuntimeEvidence:
            ev = await self._check_guarded(htmls[i], plans[i])
            pending[0] -= 1
            if not pending[0]:
                first_pass.set()
            crashed = ev.status == "crashed"
            if self.cfg.recheck_timeouts and ((len(htmls) > 1 and ev.timed_out) or crashed):
                # Beside other apps a slow one may time out that would not alone, and a renderer may crash under
                # the machine's memory or CPU pressure (the trainer's too, so a batch of one is checked again): once
                # the batch's first pass is over, check it again with the batch to itself, one recheck at a time.
                # A time-out's verdict alone stands; a crash is the app's only if it crashes alone too, else the
                # machine's, and the app gets no verdict (the same app, the same verdict, at any load).
                await first_pass.wait()
                # What load could have made is the load and the probe. The checks ran after them under their own
                # limits of page time (tests/test_checks_time.py), so where the first pass ran them they are kept
                # and the recheck leaves them out (most of a recheck's time, a WebGL app's above all).
                kept = plans[i] is not None and ev.status in CHECKED
                async with alone:
                    again = await self._check_guarded(htmls[i], None if kept else plans[i])
                if kept and again.status in CHECKED:
                    again.check_results, again.checks_error = ev.check_results, ev.checks_error
                if crashed and again.status not in ("crashed", "unavailable"):
                    again = RuntimeEvidence(status="unavailable", error=CRASHED_BESIDE_OTHERS)
                again.rechecked_from = ev.load_bound or ev.status
                return again
            return ev

        def resolve(task: asyncio.Task, fut: Future) -> None:
            if task.cancelled():
                fut.cancel()
            elif (exc := task.exception()) is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(task.result())

        tasks = [asyncio.ensure_future(one(i)) for i in range(len(htmls))]
        for t, f in zip(tasks, futures):
            t.add_done_callback(functools.partial(resolve, fut=f))
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _check_guarded(self, html: str, plan: CheckPlan | None = None) -> RuntimeEvidence:
        assert self._sem is not None
        async with self._sem:
            self._busy += 1
            try:
                for attempt in range(self.cfg.max_restarts + 1):
                    try:
                        browser = await self._ensure_browser()
                    except Exception as e:  # the browser cannot start: no verdict for this app
                        return RuntimeEvidence(status="unavailable", error=f"browser launch failed: {e}")
                    ev = await self._session(browser, html, plan)
                    if ev.status != "unavailable" or browser.is_connected():
                        return ev
                    # The browser died under this app (a crash, or killed): relaunch and load the app again.
                return RuntimeEvidence(status="unavailable", error=f"browser crashed {self.cfg.max_restarts + 1} times")
            finally:
                self._busy -= 1

    async def _session(self, browser: Browser, html: str, plan: CheckPlan | None) -> RuntimeEvidence:
        """One app's session, in order: its sandbox (a fresh context), load, settle, probe, then its executable
        checks. Load, settle and probe run within the hard limit, the checks after it under their own limits
        (nothing they do changes the load's verdict). Each step returns its typed record, kept in the app's evidence
        (``LoadRecord``, the ``ProbeRecord`` the probe builds in ``session.evidence``, ``CheckRecord``); the gate's
        verdict is read from them once, later (``RuntimeEvidence.verdict``)."""
        ev, session, started = RuntimeEvidence(), ProbeSession(answer_window_s(self.cfg.max_slowdown)), time.perf_counter()
        gone = self._gone or asyncio.get_running_loop().create_future()  # the disconnect of the browser it was given
        hold: Hold | None = None  # the hard limit held on the page's own clock
        try:
            context = await before_gone(browser.new_context(service_workers="block", accept_downloads=False,
                                                            viewport=VIEWPORT), gone)
        except Exception as e:
            return RuntimeEvidence(status="unavailable", error=f"new context failed: {e}")
        try:
            async with hard_limit(self.cfg.hard_limit_s) as limit:
                session.deadline = limit.when
                page, release, probing = await self._open(context, html, ev, session, gone)
                hold = Hold(limit, page, self.cfg.hard_limit_s, self.cfg.max_slowdown,
                            self.cfg.probe.hang_grace_s if self.cfg.probe.enabled else 0.0)
                holding = asyncio.ensure_future(hold.run())
                try:
                    ev.record(await load_app(page, ev, session, limit, self.cfg))
                    if ev.status in CHECKED:
                        await self._screenshot(page, html, "load", limit)  # what the user sees before anyone acts
                    if self._probes(ev):
                        await run_probe(page, html, self.cfg.probe, session, lambda st: stack_offset(html, st),
                                        VIEWPORT, session.idle, self.cfg.clock)  # the ProbeRecord: session.evidence
                        await self._screenshot(page, html, "probe", limit)
                finally:
                    holding.cancel()  # why it ended stays readable (hold.end)
                    release()  # what the checks do in the load page is not the load's evidence
            if plan is not None and ev.status in CHECKED:
                ev.record(await self._checks(context, page, html, session, plan, probing))
        except asyncio.TimeoutError:
            ev = self._out_of_time(ev, hold, session)
        except Exception as e:
            if not browser.is_connected():
                ev = RuntimeEvidence(status="unavailable", error=f"browser disconnected: {e}")
            elif ev.status == "ok":
                ev.status, ev.error = "crashed", f"{type(e).__name__}: {e}"
        finally:
            try:  # closing the context kills its renderer, hung or not
                await within(context.close(), 10)
            except Exception:
                pass
        if not browser.is_connected():  # whatever this app did, the browser died under it: no verdict here
            ev = RuntimeEvidence(status="unavailable", error="browser disconnected during the check")
        elif session.started:
            if session.evidence.status == "ok" and ev.status == "unresponsive":  # the hard limit hit mid-probe
                session.evidence.status = "hung"
            # A navigation an action started can reach the route after the probe returned (under load): keep it.
            session.evidence.navigations = list(session.navigations)
            ev.interaction = session.evidence
        ev.duration_s = round(time.perf_counter() - started, 3)
        return ev

    def _out_of_time(self, ev: RuntimeEvidence, hold: Hold | None, session: ProbeSession) -> RuntimeEvidence:
        """The evidence of an app its hard limit stopped: unresponsive, saying why the hold let the deadline stand;
        no verdict when the machine starved its page (``NO_VERDICT_ENDS``)."""
        why = hold.why() if hold else ""
        if hold is not None and hold.end in NO_VERDICT_ENDS:  # the machine's doing, not the app's
            session.started = False  # nor a verdict of the probe's, cut short with it
            return RuntimeEvidence(status="unavailable", error=f"hard limit of {self.cfg.hard_limit_s}s: {why}",
                                   no_verdict=hold.end)
        if ev.status in ("ok", "page_error"):  # after an error at load the probe's use decides: cut short, it showed nothing
            # a page that never loaded timed out loading, whichever clock told it first (goto's or the hold's)
            ev.status = "unresponsive" if session.loaded else "load_timeout"
        ev.page_errors.append(PageError("TimeoutError", f"hard limit of {self.cfg.hard_limit_s}s reached (the page's "
                                        f"own time, {self.cfg.hard_limit_s * self.cfg.max_slowdown:g}s of wall "
                                        f"time at most){': ' + why if why else ''}"))
        return ev

    async def _open(self, context: BrowserContext, html: str, ev: RuntimeEvidence, session: ProbeSession,
                    gone: asyncio.Future[None]) -> tuple[Page, Callable[[], None], Any]:
        """The app's context set up (clock, init scripts, routes) and its load page with the listeners that
        record the load's evidence; returns the page, what removes those listeners and the probe's script."""
        probe = self.cfg.probe
        await install_controlled_clock(context, self.cfg.clock)  # first: later init scripts see the clock
        await context.add_init_script(POPUP_JS)  # before the probe's: it keeps the addEventListener the probe then records
        await context.add_init_script(SELF_NAVIGATIONS_JS)
        probing = None
        if probe.enabled:
            await context.add_init_script(DIALOGS_JS)
            probing = await context.add_init_script(PROBE_JS)
        if self.served is not None:  # Local Network Access keeps a page from the loopback, where only the mirror is
            await context.grant_permissions(["local-network-access"])
        await context.route("**/*", lambda route: route_request(route, html, ev, session, self.mirror, self.served))
        await context.route_web_socket(re.compile(".*"), lambda ws: block_websocket(ws, ev, session))
        context.on("requestfailed", lambda req: on_request_failed(req, ev, session, self.served))
        page = await before_gone(open_page(context), gone)  # its main thread's CPU time readable (mainthread)
        context.on("page", lambda p: on_popup(p, session)  # popups a gesture opened: closed (not the checks' pages)
                   if p is not page and not session.checking else None)

        def on_error(exc: Any) -> None:
            if not session.started:  # during the probe the page records errors with the action that caused them
                ev.page_errors.append(PageError.thrown(html, exc))
        listeners: dict[Any, Any]  # Any: Page.on's overloads take one literal event name each
        listeners = {"pageerror": on_error, "console": lambda msg: record_console(msg, html, ev, session),
                     "crash": lambda _p: setattr(ev, "status", "crashed"), "load": session.document_loaded,
                     "dialog": lambda d: asyncio.ensure_future(answer_dialog(d, session))}
        for name, fn in listeners.items():
            page.on(name, fn)

        def release() -> None:
            for name, fn in listeners.items():
                page.remove_listener(name, fn)
        return page, release, probing

    def _probes(self, ev: RuntimeEvidence) -> bool:
        """Whether the probe uses the settled app: a working one, or one with an uncaught error at load whose use
        decides whether that error blocks it (``probe.load_error_rule``)."""
        probe = self.cfg.probe
        return probe.enabled and (ev.status == "ok" or (ev.status == "page_error" and not ev.blank_body
                                                         and probe.load_error_rule == "evidence"))

    async def _checks(self, context: BrowserContext, page: Page, html: str, session: ProbeSession, plan: CheckPlan,
                      probing: Any) -> CheckRecord:
        """The app's executable rubric checks in fresh documents of its context, the load page handed over; and,
        when they crash, why (each check is then inconclusive, saying so: ``RuntimeEvidence.checks_error``)."""
        session.checking = True  # their pages are not popups to close, their navigations not the app leaving
        try:
            if probing is not None:  # their documents (the load page's next ones too) need no probe recording
                await probing.close()
            idle = self.cfg.concurrency - self._busy  # app slots no app uses now: room for more lanes
            return CheckRecord(await run_checks(context, html, plan.checks, plan.cfg, self.cfg.load_timeout_s, page, idle))
        except Exception as e:
            why = error_reason(e)
            log.warning("the checks crashed on an app (%s); its checks are inconclusive", why)
            return CheckRecord([], why)

    async def _screenshot(self, page: Page, html: str, moment: str, limit: Any) -> None:
        if self.screenshots is not None:
            await take_screenshot(page, html, moment, self.screenshots, self.shots, limit)

_SHARED: dict[str, BrowserRuntime] = {}
_SHARED_LOCK = threading.Lock()


def shared_runtime(cfg: RuntimeConfig) -> BrowserRuntime:
    """The worker's one browser for this config (created on first use, closed at interpreter exit)."""
    import atexit

    key = cfg.model_dump_json()
    with _SHARED_LOCK:
        rt = _SHARED.get(key)
        if rt is None or rt._closed:
            rt = _SHARED[key] = BrowserRuntime(cfg)
            atexit.register(rt.close)
        return rt

