"""What the sandbox does with a page's requests, popups and navigations, recorded as a user would see them.

Every request a page makes goes through ``route_request``: the app itself is served from its fake origin, a
library URL gets what the CDN mirror answers (``tasks.env.cdn``: the file, a 404 the real CDN gives too, or
nothing: a gap in the mirror), everything else is refused and recorded with its outcome and reason in
``blocked_requests`` (``kind``: request | navigation | websocket | popup). Each record says when it happened
(``phase`` load or probe, and the probe's ``action``) so a failure can be tied to the requests before it.

Hostile pages, judged as a user sees them:

- **Popups.** A browser refuses a popup that no user gesture opened. ``POPUP_JS`` (an init script that runs
  before the app's and the probe's) lets ``window.open`` through once per gesture (a trusted input event, or
  one the interaction probe dispatches) within Chromium's activation lifespan, and otherwise refuses it
  (``null``, as the popup blocker answers) and counts it; the page is then judged as it is.
- **Reload loops.** Navigation away is answered 204 after load (the page stays). A reload the page asks for
  at load, with no user action, is let through once (``let_reload_through``): a browser loads the page again, and
  a new document that asks again reloads forever in a browser, so that is ``reload_loop``, a runtime failure, as
  is a document that reloads itself ``reload_loop_after`` times before anyone acts. One reload a user asked for (a button) is an action's navigation and stays clean. The page
  counts its own attempts (``SELF_NAVIGATIONS_JS``: the Navigation API's ``navigate`` events, on its clock); the
  requests that reach the route are fewer, and how many arrive before the verdict depends on the machine's load.

Run: the runtime calls ``route_request`` from its context route and ``reload_loop`` after the settle time.
"""
from __future__ import annotations

import asyncio
import bisect
import json
import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tasks.env.cdn import CdnMirror, unserved
from tasks.env.launch import ServedFiles
from tasks.env.page import APP_ORIGIN, APP_URL
from tasks.env.pagetime import read
from tasks.env.records import BlockedRequest, CdnServed

if TYPE_CHECKING:
    from playwright.async_api import Frame, Page, Request, Route, WebSocketRoute

    from tasks.env.evidence import RuntimeEvidence
    from tasks.env.probe import ProbeSession

POPUP_MARK = "\u0000rr-popup:"
# Chromium's transient user activation lasts 5 s and one window.open consumes it.
POPUP_JS = """(() => {
  if (window.__rrPopups) return;
  const add = EventTarget.prototype.addEventListener, open = window.open, debug = console.debug.bind(console);
  const P = {refused: 0};
  Object.defineProperty(window, '__rrPopups', {value: P, enumerable: false});
  let activeUntil = -1;
  const gesture = (e) => {
    if (e.isTrusted || (window.__rrProbe && window.__rrProbe.inDispatch)) activeUntil = performance.now() + 5000;
  };
  for (const t of ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'keydown', 'touchend'])
    add.call(window, t, gesture, true);
  window.open = function (...args) {
    if (performance.now() < activeUntil) { activeUntil = -1; return open.apply(this, args); }
    P.refused++;
    if (P.refused <= 3) { try { debug('%s' + JSON.stringify({url: String(args[0] || '').slice(0, 300), n: P.refused})); } catch (e) {} }
    return null;
  };
})();""".replace("'%s'", json.dumps(POPUP_MARK))
# Every attempt of the document to replace itself by its own URL (a reload, location.href = itself, a form sent to
# itself), counted as the page makes it: one navigate event per attempt, whether or not its request is ever made
# (a newer attempt cancels an older one before its request leaves the browser).
SELF_NAVIGATIONS_JS = """(() => {
  if (window.__rrSelfNavigations !== undefined || !window.navigation) return;
  let n = 0;
  Object.defineProperty(window, '__rrSelfNavigations', {get: () => n, enumerable: false});
  const here = (u) => { try { const a = new URL(u, location.href); return a.origin + a.pathname === location.origin + location.pathname; } catch (e) { return false; } };
  window.navigation.addEventListener('navigate', (e) => {
    if (!e.destination.sameDocument && here(e.destination.url)) n++;
  });
})();"""
REFUSED_POPUP = "a popup no user gesture opened: the browser's popup blocker refuses it"
NAVIGATION_STAYS = "navigation away after load: answered 204, the page stays"
RELOAD_ONCE = "a reload the page asked for at load, with no user action: let through once, as a browser loads it"
APP_FILE = "the application is one HTML file: nothing else is served from its origin"
CORS = {"access-control-allow-origin": "*"}


def record(ev: RuntimeEvidence, session: ProbeSession, url: str, resource_type: str, kind: str, outcome: str, reason: str,
           spec: str | None = None, checking: bool = False) -> None:
    """One entry of ``blocked_requests``, with the moment it happened: ``phase`` load, probe, or check (a request
    of the executable checks' own pages, which load the app again after the probe)."""
    phase = "check" if checking else "probe" if session.started else "load"
    rec = BlockedRequest(url[:500], resource_type, kind, outcome, reason, spec, phase,
                         None if checking else session.current_action)
    bisect.insort(ev.blocked_requests, rec, key=lambda b: b.order)


def is_self(url: str) -> bool:
    """A navigation to the app's own page (a reload, with or without a query or fragment)."""
    u, app = urlsplit(url), urlsplit(APP_URL)
    return (u.scheme, u.netloc, u.path) == (app.scheme, app.netloc, app.path)


def _frame(req: Request) -> Frame | None:
    try:
        return req.frame
    except Exception:  # a popup's first navigation is issued before its frame exists
        return None


def _checking(req: Request, session: ProbeSession) -> bool:
    """A request made once the executable checks run (their pages share the app's context)."""
    return session.checking and _frame(req) is not None


def _leaves_page(req: Request, session: ProbeSession) -> bool:
    """A top-level navigation of the app's page or of a popup it opened (not of a frame, nor a check's own page)."""
    frame = _frame(req)
    return frame is None or (frame.parent_frame is None and not _checking(req, session))


def let_reload_through(req: Request, session: ProbeSession) -> bool:
    """The load page's first reload of itself after load and before the probe acts (no user asked for it)."""
    frame = _frame(req)
    return (session.loaded and not session.started and not session.reloaded and not session.checking
            and req.is_navigation_request() and frame is not None and frame.parent_frame is None and is_self(req.url))


async def route_request(route: Route, html: str, ev: RuntimeEvidence, session: ProbeSession, mirror: CdnMirror | None,
                        served: ServedFiles | None = None) -> None:
    """Answer one request of the app's context (the page, its frames and workers) and record what was not served.
    A library the mirror has goes to its server (``served``) when the request is https: the page still sees the
    URL it asked for, and the body never crosses Playwright's pipe."""
    req = route.request
    url, rtype = req.url, req.resource_type
    if let_reload_through(req, session):
        session.reloaded = True
        record(ev, session, url, rtype, "navigation", "let_through", RELOAD_ONCE)
        await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)
        return
    if session.loaded and req.is_navigation_request() and _leaves_page(req, session):
        # Navigation away (a link, location.href, a reload, a form submit) after load: "204 No Content" keeps the
        # page. It is an attempt to leave the sandbox too, so it is listed with the other blocked requests.
        session.navigation(url)
        record(ev, session, url, rtype, "navigation", "refused", NAVIGATION_STAYS)
        await route.fulfill(status=204, body="")
        return
    if url == APP_URL:
        await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)
        return
    checking = _checking(req, session)
    if url.startswith(APP_ORIGIN):
        record(ev, session, url, rtype, "request", "not_found", APP_FILE, checking=checking)
        await route.fulfill(status=404, body="")
        return
    res = mirror.resolve(url, rtype) if mirror is not None else None
    if res is not None and res.served is not None:
        ev.cdn_served.append(CdnServed(url[:500], os.path.relpath(res.served.file)))
        if served is not None and url.startswith("https:"):  # continue_ keeps the scheme
            await route.continue_(url=served.url(res.served.body, res.served.content_type, url[:500]))
            return
        await route.fulfill(status=200, headers={**CORS, "content-type": res.served.content_type}, body=res.served.body)
        return
    outcome, reason = (res.outcome, res.reason) if res is not None else unserved(url, rtype)
    record(ev, session, url, rtype, "request", outcome, reason, res.spec if res is not None else None, checking)
    if outcome == "not_found":  # what the real CDN answers
        await route.fulfill(status=404, headers=CORS, body="")
    else:
        await route.abort("blockedbyclient")


MIRROR_DOWN = "the CDN mirror's server did not answer: a failure of the environment, not of the app"
_NO_SERVER = ("ERR_CONNECTION", "ERR_SSL", "ERR_CERT", "ERR_EMPTY_RESPONSE", "ERR_ADDRESS")  # not ERR_ABORTED: the page's


def on_request_failed(req: Request, ev: RuntimeEvidence, session: ProbeSession, served: ServedFiles | None) -> None:
    """A library the mirror's server was to answer that did not arrive because the server did not answer is an
    environment gap, recorded under the URL the app asked for: the app gets no verdict rather than a wrong one."""
    failure = req.failure or ""
    asked = served.asked_for(req.url) if served is not None else set()
    mine = [s.url for s in ev.cdn_served if s.url in asked]
    if mine and any(f in failure for f in _NO_SERVER):
        record(ev, session, mine[-1], req.resource_type, "request", "environment_gap", f"{MIRROR_DOWN} ({failure})",
               checking=_checking(req, session))


async def block_websocket(ws: WebSocketRoute, ev: RuntimeEvidence, session: ProbeSession) -> None:
    record(ev, session, ws.url, "websocket", "websocket", "refused", "a network API the app has no business calling "
           "offline")
    await ws.close(code=1008, reason="network blocked by the rubricrl sandbox")


def on_popup(page: Page, session: ProbeSession) -> None:
    """A popup a gesture opened: recorded as a navigation of the action that opened it, then closed."""
    session.navigation(getattr(page, "url", "") or "popup")
    asyncio.ensure_future(page.close())


def on_console_popup(text: str, ev: RuntimeEvidence, session: ProbeSession) -> bool:
    """The popup guard's report of a refused popup (the first few carry their URL); True when it was one."""
    if not text.startswith(POPUP_MARK):
        return False
    try:
        got = json.loads(text[len(POPUP_MARK):])
    except ValueError:
        return True
    ev.refused_popups = max(ev.refused_popups, int(got.get("n") or 0))
    record(ev, session, str(got.get("url") or "about:blank"), "document", "popup", "refused", REFUSED_POPUP)
    return True


async def count_refused_popups(page: Page, ev: RuntimeEvidence, answer_s: float) -> None:
    """The whole count of refused popups (past the first few the page reported), when the page answers within
    ``answer_s`` (``pagetime.answer_window_s``: a starved page's read is not a lost count)."""
    if not ev.refused_popups:
        return
    try:
        n = await read(page, "() => (window.__rrPopups || {refused: 0}).refused", answer_s)
        ev.refused_popups = max(ev.refused_popups, int(n))
    except Exception:  # a busy page keeps the count it reported
        pass


def reloads_before_actions(blocked: list[BlockedRequest]) -> int:
    """Times the page reloaded itself after load and before the probe acted (pure)."""
    return sum(1 for b in blocked if b.kind == "navigation" and b.phase == "load" and is_self(b.url))


async def self_navigations(page: Page, answer_s: float) -> int | None:
    """How many times the page has tried to replace itself by its own URL (``SELF_NAVIGATIONS_JS``); None when it
    does not answer within ``answer_s`` (``pagetime.answer_window_s``), or cannot count."""
    try:
        n = await read(page, "() => window.__rrSelfNavigations", answer_s)
    except Exception:
        return None
    return int(n) if isinstance(n, (int, float)) else None


def reload_loop(blocked: list[BlockedRequest], reload_loop_after: int, attempts: int | None,
                reloaded: bool = False) -> bool:
    """After the settle time: whether the page kept reloading itself, so it never settled for a user. ``attempts``:
    the current document's own count (``self_navigations``); the routed reloads in ``blocked`` stand in when it has
    none, and count when they are more (each was an attempt). ``reloaded``: the page's first reload was let through
    (``let_reload_through``), and its new document asking once more is a loop (pure)."""
    routed = reloads_before_actions(blocked)
    if reloaded:
        return max(attempts or 0, routed - 1) >= 1
    return max(attempts or 0, routed) >= reload_loop_after
