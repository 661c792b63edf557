"""The interaction probe: after load and settle, use the app as a user would, in the same sandbox.

Beyond the paper, whose judge "does not execute browser interactions" (3.3): we execute them. The in-page
half (``probe.js``, an init script that runs before any app script) records every listener registration
(``addEventListener``, ``on*`` properties and attributes) with the handler's source, errors and rejections
tagged with the action that was running, answered dialogs, animation frames and WebGL draw calls. The
Python half here, after load and settle:

1. asks the page for a plan: visible controls in document order (buttons, links, checkboxes, radios, tabs,
   elements with click/pointer listeners), text/number inputs to fill, selects to pick, canvases and
   pointer-listening elements to drag, and the keys the key handlers compare against (then arrows, space,
   enter);
2. samples liveness: animation frames requested and a visual sample (canvas pixels by a 16x16 hash, DOM
   mutations, running CSS/Web animations), at load and after the settle time (at least ``liveness_gap_s``),
   before any action; errors in that window are the app's own (they fail the load), never an action's;
3. runs the plan in the page within ``budget_s`` (values seeded, so the same app gets the same actions), each
   action followed by one frame and a look at what changed (DOM mutations, canvas pixels by a 16x16 hash,
   draw calls, scroll, form values, dialogs); a page that stops answering is hung *by that action*;
4. resizes the viewport once.

Time: the page runs on the environment's controlled clock (``tasks.env.pagetime``), so the settle time, the
liveness gap and the frame after each action are page time, the same on a quiet or a busy machine, and an
action's frame is one frame of the app's own loop (its timers and animation frames fire as the clock moves).
The probe's own waits (the fetches it lets settle, its heartbeat) take the real timers. A page that leaves the
controlled clock (``clock_reason``: busy waiting, Web Audio or media time, workers, frames heavier than the
machine runs in real time) is probed in real time, as before: its frame is the browser's next frame.

Navigation away is stopped by the runtime's route (a 204 answer keeps the page) and recorded; a form submit
nobody prevented is recorded by the page. Offsets are into the HTML application.

Decisions live elsewhere: ``interaction_failures`` (pure) lists the failures an action caused (an uncaught
error, a hang, a submit that reloads the app), ``tasks/env/severity.py`` says which of them block the app
(``env.runtime.probe.error_rule``; for it, when an action threw, the motion after the run is sampled as
``loop_after``); dead controls and no motion are rubric evidence only (``tasks/env/judge_offline.py``).
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.config.checks import ClockConfig
from schemas.config.env import ProbeConfig
from tasks.env.page import APP_URL, html_offset
from tasks.env.pagetime import answered, clock_of, let_pass, read, within
from tasks.env.probe_records import (Action, AnsweredDialog, Canvas, DeadControl, Hang, Listener, Liveness,
                                     Navigation, ProbeError, ProbeRecord, Sample, Submit)
from tasks.env.records import Failure

if TYPE_CHECKING:
    from playwright.async_api import Page, ViewportSize

# What the probe compares before and after each action, by the code an action's ``changed`` lists: code -> (what it
# is, whether only the app changes it). probe.js takes its list of codes from here (PROBE_CHANGES below); its
# state() measures each. The probe's own fill and scroll move the scroll and the form values, so they are no answer.
CHANGES: dict[str, tuple[str, bool]] = {
    "m": ("DOM mutations", True),
    "c": ("canvas pixels (a 16x16 hash)", True),
    "s": ("the scroll position", False),
    "d": ("WebGL and 2D draw calls", True),
    "dl": ("dialogs opened", True),
    "v": ("form control values", False),
}
ANSWERS = tuple(k for k, (_, app_only) in CHANGES.items() if app_only)  # an action that changed one of these answered
PROBE_JS = (Path(__file__).with_name("probe.js")).read_text(encoding="utf-8").replace(
    "PROBE_CHANGES", json.dumps(list(CHANGES)))
# Dialogs are answered at once (a user would), so the app never blocks on one: an init script of its own, before
# the probe's, as every page of the app's context answers them (the checks' too, which the probe does not record).
DIALOGS_JS = """(() => {
  if (window.__rrDialogs) return;
  Object.defineProperty(window, '__rrDialogs', {value: true, enumerable: false});
  const dialog = (type, answer) => function (msg) {
    const R = window.__rrProbe;
    if (R && R.dialog) R.dialog(type, msg);
    return answer(arguments);
  };
  window.alert = dialog('alert', () => undefined);
  window.confirm = dialog('confirm', () => true);
  window.prompt = dialog('prompt', (a) => (a.length > 1 && a[1] !== undefined ? String(a[1]) : '42'));
})();"""
MARK = "\u0000rr:"
IDLE, AFTER = -3, -2  # action tags of errors seen before the first action / after the run
_BLOCKED_NET = re.compile(r"Failed to fetch|NetworkError|ERR_BLOCKED_BY_CLIENT|ERR_NAME_NOT_RESOLVED|"
                          r"ERR_FAILED|Load failed|WebSocket", re.I)
_CLICK_TYPES = {"click", "mousedown", "mouseup", "pointerdown", "pointerup", "touchstart", "touchend", "dblclick"}


class ProbeSession:
    """Per-app state shared by the page's event handlers, the route and the probe run."""

    def __init__(self, answer_s: float = 8.0) -> None:
        self.answer_s = answer_s  # a page not answering a read this long is hung (pagetime.answer_window_s)
        self.deadline: Any = None  # when the session's hard limit ends it (loop time), once it runs: a hang is told first
        self.loaded = False  # after this, navigation away is stopped
        self.reloaded = False  # the page's one reload at load was let through (navigation.let_reload_through)
        self.new_documents = 0  # load events of the load page since that reload
        self.started = False  # after this, page errors belong to the probe, not the load
        self.idle: tuple[Sample, float] | None = None  # the liveness sample taken while the app settled
        self.checking = False  # after this, the executable checks open pages and navigate: not the app's doing
        self.current_action: int | None = None
        self.navigations: list[Navigation] = []
        self.evidence = ProbeRecord()

    def on_console(self, text: str) -> bool:
        """Our own progress marks (the action that started); True when the message was one."""
        if not text.startswith(MARK):
            return False
        try:
            self.current_action = int(json.loads(text[len(MARK):])["action"])
        except (ValueError, KeyError, TypeError):
            pass
        return True

    def document_loaded(self, *_: Any) -> None:
        if self.reloaded:
            self.new_documents += 1

    def navigation(self, url: str) -> None:
        self.navigations.append(Navigation(url[:500], self.current_action))


# -- pure helpers -------------------------------------------------------------------------------------
def handler_offset(html: str, listener: dict[str, Any], stack_offset: Any) -> int | None:
    """Where a handler is in the HTML: its source text found verbatim, else where it was registered."""
    src = (listener.get("src") or "").strip()
    if listener.get("via") == "attribute" and src:
        i = html.find(src)
        return i if i >= 0 else None
    if len(src) >= 8 and "[native code]" not in src:
        i = html.find(src[:200])
        if i >= 0:
            return i
    return stack_offset(listener.get("stack") or "")


def error_signature(e: ProbeError) -> tuple[str, int | None]:
    return (re.sub(r"\d+", "#", e.message or "")[:200], e.offset)


def interaction_failures(ev: ProbeRecord | None) -> list[Failure]:
    """Observations that fail the runtime gate (pure): errors caused by an action, a hang caused by an
    action, a form submit that reloads the app. Each carries the action and an HTML offset when known."""
    if ev is None:
        return []
    out: list[Failure] = []
    seen: set[tuple[str, int | None]] = set()
    for e in ev.errors:
        if not e.caused or error_signature(e) in seen:
            continue
        seen.add(error_signature(e))
        a = ev.action(e.action)
        out.append(Failure("error", e.action, a.kind if a else "resize", a.target_desc if a else None,
                           a.label if a else None, name=e.name, sync=e.sync, message=e.message,
                           offset=e.offset if e.offset is not None else a.handler_offset if a else None))
    if ev.hang:
        h = ev.hang
        out.append(Failure("hang", h.action, h.action_kind, h.target, h.label, offset=h.offset))
    for a in ev.actions:
        sub = a.submit
        if sub and _reloads_app(sub.action_attr):
            out.append(Failure("reload", a.i, a.kind, a.target_desc, a.label, form=sub.form, offset=sub.offset))
    return out


def _reloads_app(action_attr: str | None) -> bool:
    """A submit without an action (or to this page) reloads the app and loses its state; a form posting to
    another site is a normal form, recorded only."""
    a = (action_attr or "").strip().lower()
    return a in ("", "#", "index.html", "./", ".", "?") or a.startswith(("#", "?", "index.html"))


def summarize(ev: ProbeRecord | None) -> dict[str, Any]:
    """Compact observed facts (for judge prompts and the judgments row)."""
    if ev is None:
        return {}
    return {"status": ev.status, "actions_run": len(ev.actions), "actions_planned": ev.planned,
            "failures": [f.to_dict() for f in interaction_failures(ev)],
            "dead_controls": [c.label or c.target for c in ev.dead_controls],
            "animation_frames": ev.liveness.rafs if ev.liveness else None,
            "visual_change": ev.liveness.visual_change if ev.liveness else None,
            "dialogs": len(ev.dialogs), "navigations": len(ev.navigations),
            "clock": ev.clock, "clock_reason": ev.clock_reason}


def liveness(a: Sample, b: Sample, wall_gap_s: float) -> Liveness:
    """Motion between two in-page samples (pure), ``gap_s`` apart in the page's time (``t``, the controlled
    clock's where the page runs on it; else ``wall_gap_s``). ``visual_change``: canvas pixels, the DOM, or a
    running CSS/Web animation; ``animated`` also counts animation frames and WebGL draws."""
    gap_s = round((b.t - a.t) / 1000, 3) if a.t is not None and b.t is not None else wall_gap_s
    rafs, draws, mutations = b.rafs - a.rafs, b.draws - a.draws, b.mutations - a.mutations
    canvas_change, running = a.canvas != b.canvas, b.animations
    visual = bool(canvas_change or mutations or running)
    return Liveness(rafs, draws, mutations, canvas_change, running, gap_s, visual, bool(visual or rafs or draws))


# -- the run --------------------------------------------------------------------------------------------
async def idle_sample(page: Page, cfg: ProbeConfig) -> tuple[Sample, float] | None:
    """The first liveness sample, right after load (errors from here on are tagged idle)."""
    try:
        snap = await read(page, "() => { window.__rrProbe.action = %d; return window.__rrProbe.snapshot(); }" % IDLE,
                          cfg.hang_grace_s)
        return Sample.from_dict(snap), time.perf_counter()
    except Exception:  # a page that does not answer now is judged by the load checks that follow
        return None


def dead_controls(actions: list[Action], navigations: list[Navigation]) -> list[DeadControl]:
    """Clicked controls (not links, form fields or disclosure) that ran cleanly and changed nothing: no DOM
    change, no error, no submit, no navigation (pure)."""
    return [DeadControl(a.i, a.target_desc, a.label, a.handled)
            for a in actions
            if a.kind == "click" and a.tag not in ("a", "input", "select", "label", "summary")
            and a.outcome == "ok" and not a.changed and not a.errors
            and not a.submit and not any(nv.action == a.i for nv in navigations)]


async def run_probe(page: Any, html: str, cfg: ProbeConfig, session: ProbeSession, stack_offset: Any,
                    viewport: ViewportSize, idle: tuple[Sample, float] | None,
                    clock: ClockConfig) -> ProbeRecord:
    """Exercise a loaded page; never raises for the app's behaviour (a hang is evidence)."""
    ev = session.evidence
    ev.status = "ok"
    t0 = time.perf_counter()
    session.started = True
    grace = cfg.hang_grace_s
    try:
        plan = await answered(page, page.evaluate("([m, k]) => window.__rrProbe.plan(m, k)",
                                                  [cfg.max_actions, cfg.max_keys]), grace, session.answer_s, session.deadline)
        ev.planned = len(plan["actions"])
        # Liveness first, before any action, so motion is the app's own.
        b, canvases = await answered(page, page.evaluate("() => [window.__rrProbe.snapshot(), window.__rrProbe."
                                                         "canvases()]"), grace, session.answer_s, session.deadline)
        ev.canvases = [Canvas.from_dict(c) for c in canvases]
        if idle is not None:
            ev.liveness = liveness(idle[0], Sample.from_dict(b), round(time.perf_counter() - idle[1], 3))
        try:
            # the actions stop at budget_s of page time, or half the grace past it in wall time (heavy frames)
            run = await answered(page, page.evaluate("([a, b, s, w, r]) => window.__rrProbe.run(a, b, s, w, r)",
                                                     [plan["actions"], int(cfg.budget_s * 1000), cfg.seed,
                                                      int(cfg.request_wait_s * 1000),
                                                      int((cfg.budget_s + grace / 2) * 1000)]),
                                 cfg.budget_s + cfg.request_wait_s + grace, session.answer_s, session.deadline)
        except asyncio.TimeoutError:
            i = session.current_action
            act = plan["actions"][i] if i is not None and 0 <= i < len(plan["actions"]) else {}
            ev.status = "hung"
            ev.hang = Hang(i, act.get("kind"), act.get("desc"), act.get("label"),
                           _target_handler(html, plan, act, stack_offset))
            ev.actions = _actions(html, plan, [], stack_offset)
            return ev
        n = len(plan["actions"])
        await page.evaluate("(n) => { window.__rrProbe.action = n; }", n)  # the resize is action n
        await page.set_viewport_size({"width": cfg.resize_to[0], "height": cfg.resize_to[1]})
        await answered(page, let_pass(page, 50, clock), grace, session.answer_s, session.deadline)
        await page.set_viewport_size(viewport)
        got = await answered(page, page.evaluate("() => { window.__rrProbe.action = %d; "
                                                 "return window.__rrProbe.collect(); }" % AFTER), grace, session.answer_s, session.deadline)
        ev.actions, ev.cut = _actions(html, plan, run["log"], stack_offset), run.get("cut")
        ev.listeners = _listeners(html, plan, stack_offset)
        ev.dialogs = [AnsweredDialog.from_dict(d) for d in got["dialogs"]]
        _errors(ev, html, got["errors"], n, stack_offset)
        if any(e.caused for e in ev.errors) and ev.liveness is not None and ev.liveness.looped:
            ev.loop_after = await _loop_after(page, cfg, clock)  # whether the app's own loop survived what the actions threw
        ev.dead_controls = dead_controls(ev.actions, session.navigations)
    except asyncio.TimeoutError:  # no action was running: the app's own code stopped its page (a timer, a frame)
        ev.status, ev.error = "hung", "the page stopped answering the probe outside any action"
        ev.hang = Hang(None, "timer", "the page, outside any action")
    except Exception as e:  # navigation that got through, a closed page: evidence, not a crash of the check
        msg = str(e)
        ev.status = "navigated" if "context was destroyed" in msg or "navigat" in msg else "error"
        ev.error = f"{type(e).__name__}: {msg[:300]}"
    finally:
        ev.navigations = list(session.navigations)
        ev.duration_s = round(time.perf_counter() - t0, 3)
        ev.clock, ev.clock_reason = await clock_of(page, grace)
    return ev


async def _loop_after(page: Page, cfg: ProbeConfig, clock: ClockConfig) -> Liveness:
    """Motion across ``liveness_gap_s`` of page time after the run (two samples, as the idle liveness check takes
    them). The gap passes on the page's clock: a wall-clock sleep leaves a controlled clock paused, so no frame
    could run and every animated app whose action threw would look stopped."""
    a = Sample.from_dict(await read(page, "() => window.__rrProbe.snapshot()", cfg.hang_grace_s))
    t0 = time.perf_counter()
    await within(let_pass(page, cfg.liveness_gap_s * 1000, clock), cfg.liveness_gap_s + cfg.hang_grace_s)
    b = Sample.from_dict(await read(page, "() => window.__rrProbe.snapshot()", cfg.hang_grace_s))
    return liveness(a, b, round(time.perf_counter() - t0, 3))


def _target_handler(html: str, plan: dict[str, Any], act: dict[str, Any], stack_offset: Any) -> int | None:
    """The handler an action reached: a click-like (or key/drag) listener of its target, else any listener."""
    ls = [l for l in plan.get("listeners", []) if l.get("target_index") == act.get("target")]
    want = {"key": {"keydown", "keyup", "keypress"}, "drag": {"mousemove", "pointermove", "pointerdown", "mousedown"}}
    ls = sorted(ls, key=lambda l: l["type"] not in want.get(act.get("kind", ""), _CLICK_TYPES))
    if act.get("kind") == "key" and not ls:  # keys reach document/window listeners
        ls = [l for l in plan.get("listeners", []) if l["type"] in want["key"]]
    for l in ls:
        off = handler_offset(html, l, stack_offset)
        if off is not None:
            return off
    return None


def _actions(html: str, plan: dict[str, Any], log: list[dict[str, Any]], stack_offset: Any) -> list[Action]:
    """The actions probe.js ran (its ``log``), each with the control it used (its ``plan``) and that control's
    handler in the HTML."""
    out = []
    for rec in log:
        a, sub = plan["actions"][rec["i"]], rec.get("submit")
        form = Submit(sub.get("form"), sub.get("action_attr"), form_offset(html, sub.get("form"))) if sub else None
        out.append(Action(rec["i"], a["kind"], a["desc"], a.get("target"), a.get("label", ""), a.get("tag"),
                          bool(a.get("handled")), a.get("key"), rec["outcome"], tuple(rec["changed"]), rec["errors"],
                          form, _target_handler(html, plan, a, stack_offset)))
    return out


def form_offset(html: str, desc: str | None) -> int | None:
    """The ``<form`` tag a description (``form#id``) names, else the first form (pure)."""
    m = re.search(r"#([\w-]+)", desc or "")
    if m:
        for q in ('"', "'"):
            i = html.find(f"id={q}{m.group(1)}{q}")
            if i >= 0:
                return html.rfind("<", 0, i)
    i = html.lower().find("<form")
    return i if i >= 0 else None


def _listeners(html: str, plan: dict[str, Any], stack_offset: Any) -> list[Listener]:
    return [Listener(l["type"], l["target"], l["via"], handler_offset(html, l, stack_offset))
            for l in plan.get("listeners", [])[:300]]


def _errors(ev: ProbeRecord, html: str, errors: list[dict[str, Any]], n_actions: int, stack_offset: Any) -> None:
    """Map in-page errors to HTML offsets; an error is *caused* by an action when it was raised while the
    action ran (or in its frame) and the app did not raise the same error while idle."""
    got = [_error(html, e, stack_offset) for e in errors]
    ev.idle_errors += [e for e in got if e.action == IDLE]
    idle = {error_signature(e) for e in ev.idle_errors}
    ev.errors += [replace(e, caused=error_signature(e) not in idle and not _blocked(e)) for e in got
                  if e.action is not None and 0 <= e.action <= n_actions]


def _error(html: str, e: dict[str, Any], stack_offset: Any) -> ProbeError:
    """An in-page error (probe.js), placed in the HTML by its stack, else by its line when the app's page threw."""
    off = stack_offset(e.get("stack") or "")
    if off is None and e.get("filename") == APP_URL and e.get("line"):
        off = html_offset(html, int(e["line"]), int(e.get("column") or 1))
    message = re.sub(r"^Uncaught (\w+: )?", "", e.get("message") or "")  # the name is its own field
    return ProbeError(e.get("action"), e.get("sync"), e.get("kind") or "error", e.get("name"), message, e.get("stack"),
                      e.get("line"), e.get("column"), off)


def _blocked(e: ProbeError) -> bool:
    """A request the sandbox blocked is not the app's fault: a rejected fetch is recorded, never blamed."""
    return e.kind == "rejection" and _BLOCKED_NET.search(e.message) is not None
