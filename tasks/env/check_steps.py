"""The check language's steps in a page (``schemas/checks.py``): finding a locator's target, acting on it,
reading text, numbers and canvas pixels, and re-reading an expectation a poll interval of page time apart until
it holds or its timeout ends. A step that cannot look raises ``Inconclusive``; an expectation that did not hold
on a found target raises ``Failed`` with the observed and expected values."""
from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from schemas.checks import (MAX_STEP_TIMEOUT_MS, Absent, Arith, CanvasChanges, Click, Const, Count, DblClick,
                            Disabled, Drag, Enabled, Fill, Hidden, Hover, Locator, NoError, NumberChanges,
                            NumberRelation, Press, Read, Ref, Reload, Remember, Resize, Select, TextChanges,
                            TextMatches, TextSame, Value, Visible, Wait, step_kind)
from schemas.config.checks import ChecksConfig
from tasks.env.locate import matches
from tasks.env.page import APP_URL
from tasks.env.pagetime import HAD_TIME, STARVED, Limit, OutOfTime, PageTime
from tasks.env.records import PageError

if TYPE_CHECKING:
    from playwright.async_api import Locator as PwLocator, Page, Position


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


_BOXES_JS = "es => es.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
# Playwright calls an element of opacity 0 visible; a user sees nothing there (a screen faded out, waiting its turn)
_SHOWN_JS = ("e => { for (let n = e; n; n = n.parentElement) if (getComputedStyle(n).opacity === '0') return false; "
             "return true; }")
_TEXT_JS = "es => es.slice(0, 1).map(e => /^(INPUT|TEXTAREA|SELECT)$/.test(e.tagName) ? [true, e.value] : [false, e.innerText])"


_OPS = {"eq": lambda a, b, t: abs(a - b) <= t, "ne": lambda a, b, t: abs(a - b) > t, "lt": lambda a, b, t: a < b,
        "le": lambda a, b, t: a <= b + t, "gt": lambda a, b, t: a > b, "ge": lambda a, b, t: a >= b - t}


class Inconclusive(Exception):
    """The check could not look (nothing found, nothing readable): no verdict on the item."""


class NotAtOnce(Exception):
    """A read of ``StepRun(at_once=True)`` that needs page time to pass (its expectation did not hold, or its
    target is not there yet): the check must run on its own."""


# Expectations that only read the page: a check made of these alone can be read in a document shared with others
# of its kind (``tasks/env/checks.py``), as long as each one holds at its first reading.
READS = (Count, NumberRelation, TextMatches, Value, Visible, Enabled, Disabled, Absent)


def reads_only(check: Any) -> bool:
    return bool(check.steps) and all(isinstance(s, READS) for s in check.steps)


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


def drawing_changed(before: list[Any], after: list[Any], region: tuple[float, float, float, float]) -> float:
    """The largest share of changed pixels among the drawing's elements (pictures in page order, None when off
    screen): 1.0 when an element came, went, or came on or off screen (pure)."""
    if len(before) != len(after):
        return 1.0
    out = 0.0
    for a, b in zip(before, after):
        if a is None or b is None:
            if a is not b:
                return 1.0
            continue
        out = max(out, changed_fraction(a, b, region))
    return out


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


class StepRun:
    """One check in one page: the remembered values, the page errors, the locators seen."""

    def __init__(self, page: Page, html: str, cfg: ChecksConfig, t: PageTime, errors: list[PageError],
                 lane: Any, at_once: bool = False) -> None:
        self.page, self.html, self.cfg, self.time, self.lane = page, html, cfg, t, lane
        self.at_once = at_once  # every reading is the first: none lets page time pass (NotAtOnce instead)
        self.memory: dict[str, Any] = {}
        self.errors = errors  # filled as the page reports them
        self.seen: set[str] = set()

    def locator(self, loc: Locator, visible: bool = True) -> PwLocator:
        return matches(self.page, loc, visible).nth(loc.nth)

    async def find(self, loc: Locator, timeout_ms: int, visible: bool = True) -> PwLocator:
        """The target, looked for until the step's timeout or until the page is still without it; Inconclusive
        when it never appears."""
        el, limit, ended = self.locator(loc, visible), Limit(self.time, timeout_ms), False
        while True:  # once the limit has passed, one more look: the page may have changed since the last
            if await el.count() > 0 and (not visible or await el.evaluate(_SHOWN_JS,
                                                                          timeout=self.act_timeout(timeout_ms))):
                self.seen.add(loc.model_dump_json())
                return el
            if ended:
                raise Inconclusive(f"locator found nothing: {loc.describe()}")
            if self.at_once:
                raise NotAtOnce(loc.describe())
            ended = await limit.step() is not None

    async def enabled(self, el: PwLocator, loc: Locator, timeout_ms: int) -> None:
        """Wait in page time for a control found disabled to be enabled (an app may enable it on a timer), and
        say it is disabled once the limit passes or the page is still: Playwright's own wait for it would be wall
        time, in which the page's controlled clock does not move."""
        limit, ended = Limit(self.time, timeout_ms), False
        while not await el.is_enabled(timeout=self.act_timeout(timeout_ms)):
            if ended:
                raise Inconclusive(f"the target is disabled: {loc.describe()}")
            ended = await limit.step() is not None

    def act_timeout(self, t: int) -> int:
        """A Playwright action's wall timeout: its waits (visible, stable over two frames, enabled) take longer on a
        starved page, so it gets ``max_slowdown`` times the step's limit. Never retried: an action that timed out
        may still have landed (a second click would answer a quiz twice), and a timeout is inconclusive anyway."""
        return int(t * self.cfg.max_slowdown)

    async def poll(self, timeout_ms: int, probe: Callable[[], Awaitable[tuple[bool, Any]]],
                   pictures: bool = False) -> Any:
        """Re-read until ``probe`` says it holds, or until the step's timeout passes (or the page is still before
        it does); returns the last observation or raises Failed. ``pictures``: each reading is a screenshot, so
        the page time between two doubles from ``poll_ms`` up to ``picture_poll_ms``."""
        limit, passed, gap = Limit(self.time, timeout_ms), None, float(self.cfg.poll_ms)
        while True:  # the verdict rests on a reading taken after the limit passed (the page may have changed
            ok, observed = await probe()  # while the last one was read)
            if ok:
                return observed
            if passed == HAD_TIME:
                raise Failed("expectation did not hold", observed)
            if passed == STARVED:
                raise Inconclusive(f"{limit.why}; last observed {str(observed)[:100]!r}")
            if self.at_once:
                raise NotAtOnce(str(observed)[:100])
            passed = await limit.step(gap)
            gap = min(gap * 2, max(self.cfg.picture_poll_ms, self.cfg.poll_ms)) if pictures else gap

    async def no_error_yet(self, timeout_ms: int) -> None:
        """On the controlled clock, let the step's timeout pass (or the page be still) unless an error comes first:
        an error a timer or frame throws after the action counts, at no wall-time cost."""
        if not self.time.controlled:
            return
        limit = Limit(self.time, timeout_ms)
        while not self.errors and await limit.step() is None:
            pass

    @staticmethod
    async def read_text(el: PwLocator) -> str | None:
        """A form control's value, else the element's rendered text, in one round trip (it is re-read when
        polled); None when ``el`` matches nothing now. The element is looked up and read in the page at once: a
        handle of it would cost two more."""
        got = await el.evaluate_all(_TEXT_JS)
        if not got:
            return None
        control, text = got[0]
        return text if control else text.strip()

    async def text_of(self, el: PwLocator) -> str:
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

    async def picture(self, el: PwLocator) -> Any:
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

    async def drawing(self, loc: Locator, t: int) -> list[Any]:
        """Pictures of every element of the drawing (each visible canvas and svg, in page order) cut from one
        picture of the viewport; None for one off screen. Inconclusive when nothing is drawn."""
        import numpy as np
        from PIL import Image
        from playwright.async_api import TimeoutError as ActionTimeout

        await self.find(loc, t)
        els = matches(self.page, loc)
        while True:  # as ``picture``: a starved renderer paints slowly, and a read changes nothing in the page
            try:
                boxes = await els.evaluate_all(_BOXES_JS)
                png = await self.page.screenshot(timeout=self.act_timeout(self.cfg.step_timeout_ms), animations="allow")
                break
            except ActionTimeout:
                if not await els.count():
                    raise
        shot = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        h, w = shot.shape[:2]
        scale = w / ((self.page.viewport_size or {"width": 0})["width"] or w)
        out = []
        for x0, y0, x1, y1 in boxes:
            a, b = max(int(x0 * scale), 0), max(int(y0 * scale), 0)
            c, d = min(int(x1 * scale), w), min(int(y1 * scale), h)
            out.append(shot[b:d, a:c] if c > a and d > b else None)
        return out

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

    async def point(self, el: PwLocator, rel: tuple[float, float] | None) -> Position | None:
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
            if isinstance(s, Reload):  # the same page, so what the app stored stays; settled as a check's first load
                await p.goto(APP_URL, wait_until="load", timeout=self.act_timeout(MAX_STEP_TIMEOUT_MS))
                await self.time.settle(self.cfg.settle_ms)
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
                if s.target.drawing:
                    self.memory[s.name] = {"drawing": await self.drawing(s.target, t)}
                elif s.target.canvas:
                    self.memory[s.name] = {"picture": await self.picture(await self.find(s.target, t))}
                else:
                    text = await self.text_at(s.target, t)
                    self.memory[s.name] = {"text": text, "number": parse_number(text, s.pattern)}
            elif isinstance(s, Drag):
                self.lane.pointer_moved = True
                await self.drag(s, t)
            else:
                el = await self.find(s.target, t)
                if not isinstance(s, Hover):  # as Playwright's own click, fill and pick wait for it
                    await self.enabled(el, s.target, t)
                at = self.act_timeout(t)
                self.lane.pointer_moved = self.lane.pointer_moved or isinstance(s, (Click, DblClick, Hover))
                if isinstance(s, (Click, DblClick)):
                    fn = el.click if isinstance(s, Click) else el.dblclick
                    await fn(timeout=at, position=await self.point(el, s.position))
                elif isinstance(s, Fill):
                    await el.fill(s.value, timeout=at)
                elif isinstance(s, Select):  # by label when one matches, else by value: one try, no timed fallback
                    by_label = await el.evaluate("(e, o) => [...(e.options || [])].some(x => x.label === o)", s.option)
                    pick: dict[str, Any] = {"label": s.option} if by_label else {"value": s.option}
                    await el.select_option(**pick, timeout=at)
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
                raise Failed(f"uncaught {e.name}: {e.message[:200]}", e.message[:200], "no uncaught error")
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
        if isinstance(s, Absent):
            if await self.locator(s.target).count() > 0:
                raise Inconclusive(f"the check does not apply to this page: it shows {s.target.describe()}")
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

    async def expect_on(self, el: PwLocator, s: Any, t: int) -> None:
        if isinstance(s, Count):  # counts every visible match, whatever nth says
            await self.poll_value(t, matches(self.page, s.target).count, lambda v: v >= s.at_least,
                                  f">= {s.at_least}")
            return
        if isinstance(s, (TextChanges, TextSame, NumberChanges, CanvasChanges)):
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
        await self.poll_value(t, *probes[type(s)])

    async def poll_value(self, t: int, read: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool],
                         expected: str, pictures: bool = False) -> Any:
        async def probe() -> tuple[bool, Any]:
            v = await read()
            return ok(v), v

        try:
            return await self.poll(t, probe, pictures)
        except Failed as f:
            raise Failed(f"expected {expected}, observed {str(f.observed)[:200]!r}", f.observed, expected) from None

    async def expect_change(self, el: PwLocator, s: Any, t: int) -> None:
        before = self.memory.get(s.since, {})
        if isinstance(s, CanvasChanges) and s.target.drawing:
            if "drawing" not in before:
                raise Inconclusive(f"{s.since!r} holds no picture of the drawing; remember the drawing first")

            async def drawn() -> float:
                return drawing_changed(before["drawing"], await self.drawing(s.target, t), s.region)

            await self.poll_value(t, drawn, lambda v: v >= s.min_changed, f">= {s.min_changed:.3%} of the pixels of "
                                  "some canvas or svg changed", pictures=True)
            return
        if isinstance(s, CanvasChanges):
            if "picture" not in before:
                raise Inconclusive(f"{s.since!r} holds no canvas picture; remember the canvas first")

            async def read() -> float:
                return changed_fraction(before["picture"], await self.picture(el), s.region)

            await self.poll_value(t, read, lambda v: v >= s.min_changed, f">= {s.min_changed:.3%} of pixels changed",
                                  pictures=True)
            return
        if isinstance(s, (TextChanges, TextSame)):
            same, old = isinstance(s, TextSame), before.get("text")
            if same and old is None:
                raise Inconclusive(f"no text was read into {s.since!r}")
            await self.poll_value(t, lambda: self.text_of(el), lambda v: (v == old) == same,
                                  f"{'the' if same else 'a'} text {'' if same else 'other than '}{str(old)[:100]!r}")
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

