"""Run rubric items' executable checks (``schemas/checks.py``) in the app's sandboxed browser context.

Each check runs in a fresh document of the app in a page of the context the runtime built for it
(``tasks.env.lanes``), so it sits behind the same network walls (the context's routes) and is reloaded
from scratch: one check cannot leave state for the next. ``Math.random`` is seeded in every check page, so the same app is driven the
same way on every run whatever the machine's load.

Verdicts, per item:
- ``passed``: every expectation held (each is re-read until it holds or its timeout ends);
- ``failed``: a target was found and an expectation did not hold: the failing step, the observed
  and expected values, and the page errors so far (with their HTML offsets) are kept;
- ``inconclusive``: a locator found nothing, a number could not be read, an action could not be
  performed, or the check ran out of time. A check that could not look says nothing about the app,
  so it is never a failure (a false alarm is worse than a miss).

Verdicts must not depend on machine load: every limit (a step's timeout, a ``wait``, the settle time, the
check and app limits) is *page time*, kept by the library's clock that the environment advances
(``tasks.env.pagetime``): a ``wait`` step advances it, an expectation is re-read a poll interval of page time
apart, and a page with nothing due before a limit is still, so its verdict stands at once (a target absent
from the settled page is inconclusive without waiting out the step's limit). A page that cannot run under
that clock (Web Audio or media time, workers, busy waiting) falls back to its own clock, recorded per check
(``clock``, ``clock_reason``); there a starved page gets at most ``max_slowdown`` times a limit in wall time,
and past that, or when the page stops answering, the check is inconclusive, never failed.

The checks of one app run side by side (``ChecksConfig.parallel``), each page with its own storage
(``localStorage`` is the page's ``sessionStorage``), and the app's limit is applied in rubric order, so the
verdicts are the same one at a time or all at once.

Run: ``BrowserRuntime(cfg).check_many(htmls, extras=[checks_hook(item_checks, checks_cfg)])``, or
``run_item_checks(runtime, html, item_checks)`` for one app; results land in
``RuntimeEvidence.check_results``.
"""
from __future__ import annotations

import asyncio
import io
import re
import time
from typing import Any, Awaitable, Callable

from schemas.checks import (Arith, CanvasChanges, Check, Click, Const, Count, DblClick, Disabled, Drag, Enabled, Fill,
                            Hidden, Hover, Locator, NoError, NumberChanges, NumberRelation, Press, Read, Ref, Remember,
                            Resize, Select, TextChanges, TextMatches, Value, Visible, Wait, step_kind)
from schemas.config.checks import ChecksConfig
from tasks.env.lanes import Lane
from tasks.env.page import APP_URL
from tasks.env.pagetime import CLOCK_READ_S, Limit, OutOfTime, PageTime, limit_passed, page_clock_ms

ItemChecks = list[tuple[str, Check]]
Hook = Callable[[Any, str, Any, Any, Any], Awaitable[None]]
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
# mulberry32: a seeded Math.random, so random quizzes, shuffles and games deal the same way every run
_SEED_JS = """(() => { let a = %d >>> 0; Math.random = function () {
  a = (a + 0x6D2B79F5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; })();"""
# Checks side by side in one context share its origin's localStorage: each page gets its own (its sessionStorage,
# which starts empty in every new page), so no check sees what another (or the probe) stored.
_ISOLATE_JS = """(() => { try { Object.defineProperty(window, 'localStorage',
  {configurable: true, get: () => window.sessionStorage}); } catch (e) {} })();"""
_TEXT_JS = "es => es.slice(0, 1).map(e => /^(INPUT|TEXTAREA|SELECT)$/.test(e.tagName) ? [true, e.value] : [false, e.innerText])"
_OPS = {"eq": lambda a, b, t: abs(a - b) <= t, "ne": lambda a, b, t: abs(a - b) > t, "lt": lambda a, b, t: a < b,
        "le": lambda a, b, t: a <= b + t, "gt": lambda a, b, t: a > b, "ge": lambda a, b, t: a >= b - t}


class Inconclusive(Exception):
    """The check could not look (nothing found, nothing readable): no verdict on the item."""


class Failed(Exception):
    def __init__(self, reason: str, observed: Any = None, expected: Any = None) -> None:
        super().__init__(reason)
        self.observed, self.expected = observed, expected


def parse_number(text: str | None, pattern: str | None = None) -> float | None:
    """The number in ``text``: the first group (or match) of ``pattern``, else the first number (pure)."""
    if text is None:
        return None
    if pattern is not None:
        m = re.search(pattern, text, re.I)
        if not m:
            return None
        text = m.group(1) if m.groups() and m.group(1) is not None else m.group(0)
    m = _NUMBER.search(text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


def changed_fraction(before: Any, after: Any, region: tuple[float, float, float, float]) -> float:
    """Share of pixels of the relative ``region`` that differ between two RGB arrays (pure)."""
    if before.shape != after.shape:
        return 1.0
    h, w = before.shape[:2]
    x0, y0, x1, y1 = int(region[0] * w), int(region[1] * h), max(int(region[2] * w), 1), max(int(region[3] * h), 1)
    a, b = before[y0:y1, x0:x1], after[y0:y1, x0:x1]
    if a.size == 0:
        return 0.0
    return float((abs(a.astype("int16") - b.astype("int16")).max(axis=-1) > 8).mean())


def result_record(item_id: str, status: str, *, step: int | None = None, kind: str | None = None, reason: str = "",
                  observed: Any = None, expected: Any = None, errors: list[dict[str, Any]] | None = None,
                  duration_s: float = 0.0, clock: str | None = None, clock_reason: str | None = None) -> dict[str, Any]:
    """One item's check result (the ``check_results`` row body; offsets into the HTML). ``clock``: controlled
    (the environment's) or page (the page's own, ``clock_reason`` says why); None when the check did not run."""
    short = lambda v: None if v is None else str(v)[:500]  # noqa: E731
    return {"item_id": item_id, "status": status, "step": step, "step_kind": kind, "reason": reason[:1000],
            "observed": short(observed), "expected": short(expected), "errors": list(errors or [])[:10],
            "duration_s": round(duration_s, 3), "clock": clock, "clock_reason": clock_reason}


class _Run:
    """One check in one page: the remembered values, the page errors, the locators seen."""

    def __init__(self, page: Any, html: str, cfg: ChecksConfig, t: PageTime, errors: list[dict[str, Any]],
                 lane: Any) -> None:
        self.page, self.html, self.cfg, self.time, self.lane = page, html, cfg, t, lane
        self.memory: dict[str, Any] = {}
        self.errors = errors  # filled as the page reports them
        self.seen: set[str] = set()

    def locator(self, loc: Locator, visible: bool = True) -> Any:
        return matches(self.page, loc, visible).nth(loc.nth)

    async def find(self, loc: Locator, timeout_ms: int, visible: bool = True) -> Any:
        """The target, looked for until the step's timeout or until the page is still without it; Inconclusive
        when it never appears."""
        el, limit, ended = self.locator(loc, visible), Limit(self.time, timeout_ms), False
        while True:  # once the limit has passed, one more look: the page may have changed since the last
            if await el.count() > 0:
                self.seen.add(loc.model_dump_json())
                return el
            if ended:
                raise Inconclusive(f"locator found nothing: {loc.describe()}")
            ended = await limit.step() is not None

    def act_timeout(self, t: int) -> int:
        """A Playwright action's wall timeout: its waits (visible, stable over two frames, enabled) take longer on a
        starved page, so it gets ``max_slowdown`` times the step's limit. Never retried: an action that timed out
        may still have landed (a second click would answer a quiz twice), and a timeout is inconclusive anyway."""
        return int(t * self.cfg.max_slowdown)

    async def poll(self, timeout_ms: int, probe: Callable[[], Awaitable[tuple[bool, Any]]]) -> Any:
        """Re-read until ``probe`` says it holds, or until the step's timeout passes (or the page is still before
        it does); returns the last observation or raises Failed."""
        limit, passed = Limit(self.time, timeout_ms), None
        while True:  # the verdict rests on a reading taken after the limit passed (the page may have changed
            ok, observed = await probe()  # while the last one was read)
            if ok:
                return observed
            if passed == "page":
                raise Failed("expectation did not hold", observed)
            if passed == "wall":
                raise Inconclusive(f"{limit.why}; last observed {str(observed)[:100]!r}")
            passed = await limit.step()

    async def no_error_yet(self, timeout_ms: int) -> None:
        """On the controlled clock, let the step's timeout pass (or the page be still) unless an error comes first:
        an error a timer or frame throws after the action counts, at no wall-time cost."""
        if not self.time.controlled:
            return
        limit = Limit(self.time, timeout_ms)
        while not self.errors and await limit.step() is None:
            pass

    @staticmethod
    async def read_text(el: Any) -> str | None:
        """A form control's value, else the element's rendered text, in one round trip (it is re-read when
        polled); None when ``el`` matches nothing now. The element is looked up and read in the page at once: a
        handle of it would cost two more."""
        got = await el.evaluate_all(_TEXT_JS)
        if not got:
            return None
        control, text = got[0]
        return text if control else text.strip()

    async def text_of(self, el: Any) -> str:
        """``read_text`` of a target found earlier in the step; gone since, the check cannot look."""
        text = await self.read_text(el)
        if text is None:
            raise Inconclusive("the target went away while it was read")
        return text

    async def text_at(self, loc: Locator, t: int) -> str:
        """The text of ``loc``'s target: read at once when it is there, else looked for as ``find`` does."""
        text = await self.read_text(self.locator(loc))
        if text is not None:
            self.seen.add(loc.model_dump_json())
            return text
        return await self.text_of(await self.find(loc, t))  # Inconclusive when it never appears

    async def picture(self, el: Any) -> Any:
        import numpy as np
        from PIL import Image
        from playwright.async_api import TimeoutError as ActionTimeout

        while True:  # a starved renderer paints slowly: taken again while the target is there (the check's wall
            try:  # cap ends it), as a read changes nothing in the page
                png = await el.screenshot(timeout=self.act_timeout(self.cfg.step_timeout_ms), animations="allow")
                return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
            except ActionTimeout:
                if not await el.count():
                    raise

    async def number(self, n: Any, t: int) -> float:
        if isinstance(n, Const):
            return n.const
        if isinstance(n, Ref):
            v = self.memory.get(n.ref, {}).get("number")
            if v is None:
                raise Inconclusive(f"no number was read into {n.ref!r}")
            return float(v)
        if isinstance(n, Read):
            text = await self.text_at(n.read, t)
            v = parse_number(text, n.pattern)
            if v is None:
                raise Inconclusive(f"no number in {text[:100]!r} ({n.read.describe()})")
            return v
        assert isinstance(n, Arith)
        a, b = await self.number(n.args[0], t), await self.number(n.args[1], t)
        if n.op == "div" and b == 0:
            raise Inconclusive("division by zero in the expected number")
        return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b if b else 0.0}[n.op]

    async def point(self, el: Any, rel: tuple[float, float] | None) -> dict[str, float] | None:
        if rel is None:
            return None
        box = await el.bounding_box()
        if box is None:
            raise Inconclusive("the target has no box on screen")
        return {"x": rel[0] * box["width"], "y": rel[1] * box["height"]}

    async def act(self, s: Any, t: int) -> None:
        p = self.page
        try:
            if isinstance(s, Wait):
                await self.time.wait(s.ms)
                return
            elif isinstance(s, Resize):
                await p.set_viewport_size({"width": s.width, "height": s.height})
            elif isinstance(s, Press):
                key = " " if s.key == "Space" else s.key
                if s.target is not None:
                    await (await self.find(s.target, t)).press(key, timeout=self.act_timeout(t))
                else:
                    await p.keyboard.press(key)
            elif isinstance(s, Remember):
                if s.target.canvas:
                    self.memory[s.name] = {"picture": await self.picture(await self.find(s.target, t))}
                else:
                    text = await self.text_at(s.target, t)
                    self.memory[s.name] = {"text": text, "number": parse_number(text, s.pattern)}
            elif isinstance(s, Drag):
                self.lane.pointer_moved = True
                await self.drag(s, t)
            else:
                el = await self.find(s.target, t)
                at = self.act_timeout(t)
                self.lane.pointer_moved = self.lane.pointer_moved or isinstance(s, (Click, DblClick, Hover))
                if isinstance(s, (Click, DblClick)):
                    fn = el.click if isinstance(s, Click) else el.dblclick
                    await fn(timeout=at, position=await self.point(el, s.position))
                elif isinstance(s, Fill):
                    await el.fill(s.value, timeout=at)
                elif isinstance(s, Select):  # by label when one matches, else by value: one try, no timed fallback
                    by_label = await el.evaluate("(e, o) => [...(e.options || [])].some(x => x.label === o)", s.option)
                    await el.select_option(**({"label": s.option} if by_label else {"value": s.option}), timeout=at)
                elif isinstance(s, Hover):
                    await el.hover(timeout=at)
            if not isinstance(s, Remember):
                await self.time.after_action()
        except (Inconclusive, Failed, OutOfTime):
            raise
        except Exception as e:  # not clickable, detached, no such option: the check could not act
            raise Inconclusive(f"could not {step_kind(s)}: {str(e).splitlines()[0][:300]}") from None

    async def drag(self, s: Drag, t: int) -> None:
        src = await self.find(s.target, t)
        dst = await self.find(s.to, t) if s.to is not None else src
        a, b = await src.bounding_box(), await dst.bounding_box()
        if a is None or b is None:
            raise Inconclusive("drag target has no box on screen")
        m = self.page.mouse
        await m.move(a["x"] + s.start[0] * a["width"], a["y"] + s.start[1] * a["height"])
        await m.down()
        await m.move(b["x"] + s.end[0] * b["width"], b["y"] + s.end[1] * b["height"], steps=8)
        await m.up()

    async def expect(self, s: Any, t: int) -> None:
        if isinstance(s, NoError):
            await self.no_error_yet(t)
            if self.errors:
                e = self.errors[0]
                raise Failed(f"uncaught {e['name']}: {e['message'][:200]}", e["message"][:200], "no uncaught error")
            return
        if isinstance(s, NumberRelation):
            async def rel() -> tuple[bool, Any]:
                a, b = await self.number(s.left, t), await self.number(s.right, t)
                return _OPS[s.op](a, b, s.tolerance), (a, b)

            try:
                await self.poll(t, rel)
            except Failed as f:
                a, b = f.observed
                raise Failed(f"{a:g} {s.op} {b:g} does not hold (tolerance {s.tolerance:g})", f"{a:g}",
                             f"{s.op} {b:g}") from None
            return
        if isinstance(s, Hidden):
            el = self.locator(s.target, visible=False)
            if await el.count() == 0:
                if s.target.model_dump_json() in self.seen:
                    return  # it was there earlier in this check and is gone now
                raise Inconclusive(f"locator found nothing: {s.target.describe()}")
            await self.expect_on(el, s, t)
            return
        el = await self.find(s.target, t, visible=not isinstance(s, Visible))
        await self.expect_on(el, s, t)

    async def expect_on(self, el: Any, s: Any, t: int) -> None:
        if isinstance(s, Count):  # counts every visible match, whatever nth says
            await self.poll_value(t, matches(self.page, s.target).count, lambda v: v >= s.at_least,
                                  f">= {s.at_least}")
            return
        if isinstance(s, (TextChanges, NumberChanges, CanvasChanges)):
            await self.expect_change(el, s, t)
            return
        probes: dict[type, tuple[Callable[[], Awaitable[Any]], Callable[[Any], bool], str]] = {
            Visible: (el.is_visible, bool, "visible"), Hidden: (el.is_hidden, bool, "hidden"),
            Enabled: (el.is_enabled, bool, "enabled"), Disabled: (el.is_disabled, bool, "disabled"),
        }
        if isinstance(s, (TextMatches, Value)):
            pat = re.compile(s.matches, re.I)
            read = (lambda: el.input_value()) if isinstance(s, Value) else (lambda: self.text_of(el))
            await self.poll_value(t, read, lambda v: bool(pat.search(v or "")), f"/{s.matches}/")
            return
        read, ok, want = probes[type(s)]
        await self.poll_value(t, read, ok, want)

    async def poll_value(self, t: int, read: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool],
                         expected: str) -> Any:
        async def probe() -> tuple[bool, Any]:
            v = await read()
            return ok(v), v

        try:
            return await self.poll(t, probe)
        except Failed as f:
            raise Failed(f"expected {expected}, observed {str(f.observed)[:200]!r}", f.observed, expected) from None

    async def expect_change(self, el: Any, s: Any, t: int) -> None:
        before = self.memory.get(s.since, {})
        if isinstance(s, CanvasChanges):
            if "picture" not in before:
                raise Inconclusive(f"{s.since!r} holds no canvas picture; remember the canvas first")

            async def read() -> float:
                return changed_fraction(before["picture"], await self.picture(el), s.region)

            await self.poll_value(t, read, lambda v: v >= s.min_changed, f">= {s.min_changed:.3%} of pixels changed")
            return
        if isinstance(s, TextChanges):
            await self.poll_value(t, lambda: self.text_of(el), lambda v: v != before.get("text"),
                                  f"a text other than {str(before.get('text'))[:100]!r}")
            return
        old = before.get("number")
        if old is None:
            raise Inconclusive(f"no number was read into {s.since!r}")

        async def now() -> float | None:
            return parse_number(await self.text_of(el), s.pattern)

        first = await now()
        if first is None:
            raise Inconclusive(f"no number in {s.target.describe()}")
        want = {"any": lambda v: v is not None and v != old, "up": lambda v: v is not None and v > old,
                "down": lambda v: v is not None and v < old}[s.direction]
        await self.poll_value(t, now, want, f"{s.direction} from {old:g}")


def matches(page: Any, loc: Locator, visible: bool = True) -> Any:
    """Every element ``loc`` finds (visible ones only unless ``visible`` is False); patterns ignore case."""
    p, flags = page, re.I
    if loc.role is not None:
        b = p.get_by_role(loc.role, name=re.compile(loc.name, flags) if loc.name else None)
    elif loc.text is not None:
        b = p.get_by_text(re.compile(loc.text, flags))
    elif loc.label is not None:
        b = p.get_by_label(re.compile(loc.label, flags))
    elif loc.placeholder is not None:
        b = p.get_by_placeholder(re.compile(loc.placeholder, flags))
    elif loc.css is not None:
        b = p.locator(loc.css)
    else:
        b = p.locator("canvas")
    return b.filter(visible=True) if visible else b


async def _outlive(task: asyncio.Future, t: PageTime, limit_s: float, wall_cap_s: float) -> Any:
    """Await ``task`` (a check whose controlled clock keeps its own limit) up to ``wall_cap_s`` while the page
    lives (its own clock advances; two readings in a row that do not mean it stopped);
    on the page's own clock, past ``limit_s`` of wall time it goes on while the time the check let pass on that
    clock (``PageTime.used_ms``) is short of the limit. Else it is cancelled and OutOfTime raised."""
    wall0, last, misses, wait_s = time.monotonic(), -1.0, 0, min(limit_s, wall_cap_s)
    while True:
        done, _ = await asyncio.wait({task}, timeout=max(wait_s, 0.05))
        if done:
            return task.result()
        wall = time.monotonic() - wall0
        # a page on the controlled clock that answers at all is alive, however slowly a starved machine runs it
        now = await page_clock_ms(t.page, CLOCK_READ_S * (t.cfg.max_slowdown if t.controlled else 1))
        misses = misses + 1 if now is None or now <= last else 0
        why = (f"wall limit of {wall_cap_s:g}s reached" if wall >= wall_cap_s else
               "the page stopped answering" if misses >= 2 else
               None if t.controlled or limit_passed(wall, t.used_ms(), limit_s * 1000, t.cfg.max_slowdown) is None
               else f"check time limit of {limit_s:g}s (page time) reached")
        if why is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise OutOfTime(why)
        last = now if now is not None else last
        wait_s = min(1.0 if t.controlled else max((limit_s * 1000 - t.used_ms()) / 1000, 0.5), wall_cap_s - wall)


async def _check_in_page(lane: Lane, item_id: str, check: Check, cfg: ChecksConfig, load_timeout_s: float,
                         wall_cap_s: float) -> tuple[dict[str, Any], float]:
    """One check in a fresh document of the app in ``lane``'s page (the context's routes serve it), and the page
    time it used (seconds); never raises."""
    started = time.perf_counter()
    errors: list[dict[str, Any]] = []
    page = await lane.open(errors)
    t = PageTime(page, cfg, min(cfg.check_limit_s, cfg.app_limit_s) * 1000)
    run = _Run(page, lane.html, cfg, t, errors, lane)
    state: dict[str, Any] = {"step": None}

    async def steps() -> None:
        # the runtime has loaded this app already: a slow load here is the machine's, not the app's
        await page.goto(APP_URL, wait_until="load", timeout=load_timeout_s * cfg.max_slowdown * 1000)
        await t.settle(cfg.settle_ms)
        for i, s in enumerate(check.steps):
            state["step"] = i
            limit = s.timeout_ms or cfg.step_timeout_ms
            await (run.expect(s, limit) if hasattr(s, "expect") else run.act(s, limit))

    def rec(status: str, **kw: Any) -> dict[str, Any]:
        i = state["step"]
        return result_record(item_id, status, step=i, kind=step_kind(check.steps[i]) if i is not None else None,
                             errors=run.errors, duration_s=time.perf_counter() - started, **kw)

    try:
        await _outlive(asyncio.ensure_future(steps()), t, t.limit_ms / 1000, wall_cap_s)
        state["step"] = None
        out = rec("passed")
    except Failed as f:
        out = rec("failed", reason=str(f), observed=f.observed, expected=f.expected)
    except (Inconclusive, OutOfTime) as e:
        out = rec("inconclusive", reason=str(e))
    except Exception as e:  # page crashed or closed under the check: no verdict
        out = rec("inconclusive", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
    # the clock as the check ended (an action may have made the page leave the controlled clock); a page that
    await lane.forget(t)  # does not answer is closed, and the next check gets a new one
    used = t.used_s()  # the controlled clock's as last read, however slowly the page answers now
    if not t.controlled and lane.page is None:  # on its own clock and no longer answering: its whole wall time
        used = max(used, time.perf_counter() - started)
    return {**out, "clock": "controlled" if t.controlled else "page", "clock_reason": t.fallback}, used


def within_app_limit(ran: list[tuple[dict[str, Any], float]], app_limit_s: float) -> list[dict[str, Any]]:
    """Results with the app's limit of page time applied in rubric order (pure): a check that ends past it, or
    starts after it is spent, is inconclusive, whatever order the checks ran in."""
    out, spent = [], 0.0
    for rec, used in ran:
        if spent >= app_limit_s or spent + used > app_limit_s:
            rec = result_record(rec["item_id"], "inconclusive", reason=f"app limit of {app_limit_s:g}s (page time) "
                                "spent", errors=rec["errors"], duration_s=rec["duration_s"], clock=rec["clock"],
                                clock_reason=rec["clock_reason"])
        out.append(rec)
        spent += used
    return out


async def run_checks(context: Any, html: str, checks: ItemChecks, cfg: ChecksConfig, load_timeout_s: float = 5.0,
                     page: Any = None, idle: int | None = None) -> list[dict[str, Any]]:
    """Every check of one app in ``cfg.parallel`` lanes at once, each check in a fresh document on the controlled
    clock, within the app's limit of page time (``app_limit_s``; ``max_slowdown`` times it in wall time); checks
    past it or past ``max_checks`` are inconclusive. The first lane runs in ``page`` (the load page the runtime
    hands over) when given; the lanes' pages close with the context. A lane past the first opens a tab, which
    costs the CPU of a check or two: only as many open as the runtime has ``idle`` app slots (a busy batch gains
    nothing from them, the last apps of a batch finish sooner); the verdicts do not depend on it."""
    await context.add_init_script(_SEED_JS % cfg.random_seed + _ISOLATE_JS)  # the runtime installed the clock
    wall_deadline = time.monotonic() + cfg.app_limit_s * cfg.max_slowdown
    todo = list(enumerate(checks[:cfg.max_checks]))
    ran: list[Any] = [None] * len(todo)

    async def lane_runs(reuse: Any) -> None:
        lane = Lane(context, html)
        if reuse is not None:
            await lane.adopt(reuse)
        while todo:
            k, (item_id, check) = todo.pop(0)
            wall_left = wall_deadline - time.monotonic()
            ran[k] = (result_record(item_id, "inconclusive", reason=f"not run: app limit of {cfg.app_limit_s:g}s "
                                    "(wall time) spent"), 0.0) if wall_left <= 0.5 else \
                await _check_in_page(lane, item_id, check, cfg, load_timeout_s,
                                     min(cfg.check_limit_s * cfg.max_slowdown, wall_left))

    lanes = min(cfg.parallel, len(todo), 1 + max(idle, 0) if idle is not None else cfg.parallel)
    await asyncio.gather(*(lane_runs(page if i == 0 else None) for i in range(lanes)))
    skipped = [result_record(i, "inconclusive", reason=f"not run: more than {cfg.max_checks} checks")
               for i, _c in checks[cfg.max_checks:]]
    return within_app_limit(ran, cfg.app_limit_s) + skipped


def checks_hook(checks: ItemChecks, cfg: ChecksConfig, load_timeout_s: float = 5.0) -> Hook:
    """The runtime's after-load hook that runs ``checks`` and keeps their results on the evidence."""

    async def hook(context: Any, html: str, ev: Any, page: Any = None, idle: int | None = None) -> None:
        ev.check_results = await run_checks(context, html, checks, cfg, load_timeout_s, page, idle)

    return hook


def not_run(checks: ItemChecks, reason: str) -> list[dict[str, Any]]:
    """Results for checks that could not run (no app, app did not load, no browser): all inconclusive."""
    return [result_record(i, "inconclusive", reason=f"not run: {reason}") for i, _c in checks]


def run_item_checks(runtime: Any, html: str, checks: ItemChecks, cfg: ChecksConfig | None = None) -> list[dict]:
    """One app's check results through ``runtime`` (a ``BrowserRuntime``): blocking, for tests and tools."""
    cfg = cfg or ChecksConfig()
    ev = runtime.check_many([html], extras=[checks_hook(checks, cfg, runtime.cfg.load_timeout_s)])[0]
    return ev.check_results if ev.check_results else not_run(checks, f"app status {ev.status}")


def label_agreement(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Checks against hand labels: ``pairs`` of (label met|not_met, check status). Agreement is over the
    conclusive pairs; a false fail is a check that failed an item labelled met (pure)."""
    conclusive = [(lab, st) for lab, st in pairs if st != "inconclusive"]
    agree = sum((lab == "met") == (st == "passed") for lab, st in conclusive)
    return {"pairs": len(pairs), "conclusive": len(conclusive),
            "agreement": round(agree / len(conclusive), 4) if conclusive else None,
            "inconclusive_rate": round(1 - len(conclusive) / len(pairs), 4) if pairs else None,
            "false_fails": sum(lab == "met" and st == "failed" for lab, st in pairs),
            "false_passes": sum(lab == "not_met" and st == "passed" for lab, st in pairs)}
