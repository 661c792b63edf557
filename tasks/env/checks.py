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

Run: ``BrowserRuntime(cfg).check_many(htmls, checks=[CheckPlan(item_checks, checks_cfg)])`` (the runtime runs
them as the last step of each app's session), or ``run_item_checks(runtime, html, item_checks)`` for one app;
results land in ``RuntimeEvidence.check_results``.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from schemas.checks import Check, step_kind
from schemas.config.checks import ChecksConfig
from tasks.env.check_steps import Failed, Inconclusive, NotAtOnce, StepRun, reads_only
from tasks.env.lanes import Lane
from tasks.env.page import APP_URL
from tasks.env.pagetime import OutOfTime, PageTime
from tasks.env.records import CheckResult, PageError

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

ItemChecks = list[tuple[str, Check]]
Job = tuple[int, tuple[str, Check]]  # a check by its index in the app's checks
Ran = tuple[CheckResult, float]  # a check's result and the page time it used (seconds)
Reading = Callable[[Any, PageTime, list[PageError]], Awaitable[None]]  # reads a fresh document, no time passing
# mulberry32: a seeded Math.random, so random quizzes, shuffles and games deal the same way every run
_SEED_JS = """(() => { let a = %d >>> 0; Math.random = function () {
  a = (a + 0x6D2B79F5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; })();"""
# Checks side by side in one context share its origin's localStorage: each page gets its own (its sessionStorage,
# which starts empty in every new page), so no check sees what another (or the probe) stored.
_ISOLATE_JS = """(() => { try { Object.defineProperty(window, 'localStorage',
  {configurable: true, get: () => window.sessionStorage}); } catch (e) {} })();"""


@dataclass(frozen=True)
class CheckPlan:
    """One app's executable rubric checks and how to run them: what the runtime's session runs after the probe."""

    checks: ItemChecks
    cfg: ChecksConfig


def error_reason(e: BaseException) -> str:
    """An error as a check's reason: its type and first line."""
    return f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"


async def _fresh_document(page: Any, t: PageTime, cfg: ChecksConfig, load_timeout_s: float) -> None:
    """A fresh document of the app in ``page``, loaded and settled on ``t``: where every check starts."""
    # the runtime has loaded this app already: a slow load here is the machine's, not the app's
    await page.goto(APP_URL, wait_until="load", timeout=load_timeout_s * cfg.max_slowdown * 1000)
    await t.settle(cfg.settle_ms)


async def _check_in_page(lane: Lane, item_id: str, check: Check, cfg: ChecksConfig, load_timeout_s: float,
                         wall_cap_s: float, before: Reading | None = None) -> Ran:
    """One check in a fresh document of the app in ``lane``'s page (the context's routes serve it), and the page
    time it used (seconds); never raises. ``before``: what reads the fresh document first, letting no page time
    pass (``_read_at_once``), so the check still starts on the document as loaded and settled."""
    started = time.perf_counter()
    errors: list[PageError] = []
    page = await lane.open(errors)
    t = PageTime(page, cfg, min(cfg.check_limit_s, cfg.app_limit_s) * 1000)
    run = StepRun(page, lane.html, cfg, t, errors, lane)
    state: dict[str, Any] = {"step": None}

    async def steps() -> None:
        await _fresh_document(page, t, cfg, load_timeout_s)
        if before is not None:
            await before(page, t, errors)
        for i, s in enumerate(check.steps):
            state["step"] = i
            limit = s.timeout_ms or cfg.step_timeout_ms
            await (run.expect(s, limit) if hasattr(s, "expect") else run.act(s, limit))

    def rec(status: str, **kw: Any) -> CheckResult:
        i = state["step"]
        return CheckResult.of(item_id, status, step=i, kind=step_kind(check.steps[i]) if i is not None else None,
                             errors=run.errors, duration_s=time.perf_counter() - started, **kw)

    try:
        await t.outlive(asyncio.ensure_future(steps()), t.limit_ms / 1000, wall_cap_s)
        state["step"] = None
        out = rec("passed")
    except Failed as f:
        out = rec("failed", reason=str(f), observed=f.observed, expected=f.expected)
    except (Inconclusive, OutOfTime) as e:
        out = rec("inconclusive", reason=str(e))
    except Exception as e:  # page crashed or closed under the check: no verdict
        out = rec("inconclusive", reason=error_reason(e))
    # the clock as the check ended (an action may have made the page leave the controlled clock); a page that
    await lane.forget(t)  # does not answer is closed, and the next check gets a new one
    used = t.used_s()  # the controlled clock's as last read, however slowly the page answers now
    if not t.controlled and lane.page is None:  # on its own clock and no longer answering: its whole wall time
        used = max(used, time.perf_counter() - started)
    return replace(out, clock="controlled" if t.controlled else "page", clock_reason=t.fallback), used


def _read_at_once(lane: Lane, todo: list[Job], cfg: ChecksConfig, held: dict[int, Ran]) -> Reading:
    """What reads ``todo`` (checks made only of reads, ``reads_only``) in a settled fresh document on the controlled
    clock, each on its own ``StepRun`` with no page time let pass: into ``held``, by index, the results of those
    whose every reading held at once, as its own fresh document would have read them first. A reading that did not
    hold at once (or could not look) leaves its check to its own document; one that raised anything else is
    inconclusive with that error as its reason. None is kept when the page is not on the controlled clock once they are read."""

    async def reading(page: Page, t: PageTime, errors: list[PageError]) -> None:
        started, got = time.perf_counter(), []
        for k, (item_id, check) in todo:
            if not t.controlled:  # page time no longer the environment's: each check on its own, as without this
                return
            run = StepRun(page, lane.html, cfg, t, errors, lane, at_once=True)
            try:
                for s in check.steps:
                    await run.expect(s, s.timeout_ms or cfg.step_timeout_ms)
            except (NotAtOnce, Failed, Inconclusive, OutOfTime):  # not at once: its own document decides
                continue
            except Exception as e:  # the read could not be made: inconclusive, saying why
                held[k] = (CheckResult.of(item_id, "inconclusive", errors=list(errors), clock="controlled",
                                          reason=f"the shared reading failed: {error_reason(e)}"), 0.0)
                continue
            got.append((k, item_id))
        await t.look()  # a page that left the controlled clock while read: nothing is taken from it
        if t.controlled:
            # the settle's page time: what each check's own document would have used to read at once
            each, used = (time.perf_counter() - started) / max(len(got), 1), t.used_s()
            held.update({k: (CheckResult.of(item_id, "passed", errors=list(errors), duration_s=each,
                                            clock="controlled"), used) for k, item_id in got})

    return reading


def shared_document(jobs: list[Job], share_reads: bool) -> tuple[list[Job], Job | None]:
    """Which checks share one fresh document (pure): the checks made only of reads, read at once, then one check
    run whole in it: the first that acts (it needs the document as loaded, which the readings left as it was;
    nothing after it does), else the last read. ([], None): each check in its own document (one check alone
    saves nothing)."""
    reads = [job for job in jobs if reads_only(job[1][1])] if share_reads else []
    then = next((job for job in jobs if not reads_only(job[1][1])), None) if reads else None
    if then is None and len(reads) > 1:
        *reads, then = reads
    return (reads, then) if reads and then is not None else ([], None)


async def _read_together(lane: Lane, reads: list[Job], then: Job, cfg: ChecksConfig, load_timeout_s: float,
                         wall_cap_s: float) -> dict[int, Ran]:
    """``reads`` read at once in one fresh document (``_read_at_once``), then ``then`` run whole in it, on the
    route every check takes (``_check_in_page``). The results by index: ``then`` always, a read only when it held
    at once (every other runs in its own document and is decided there, as without this)."""
    held: dict[int, Ran] = {}
    k, (item_id, check) = then
    out = await _check_in_page(lane, item_id, check, cfg, load_timeout_s, wall_cap_s,
                               before=_read_at_once(lane, reads, cfg, held))
    return {**held, k: out}


async def _drain(lane: Lane, queue: list[Job], cfg: ChecksConfig, load_timeout_s: float,
                 wall_deadline: float) -> dict[int, Ran]:
    """Checks taken from ``queue`` one after another in ``lane`` until it is empty (the lanes of an app share it:
    each takes the next check not yet taken), each in its own fresh document; past the app's wall deadline,
    inconclusive without running."""
    out: dict[int, Ran] = {}
    while queue:
        k, (item_id, check) = queue.pop(0)
        wall_left = wall_deadline - time.monotonic()
        out[k] = (CheckResult.of(item_id, "inconclusive", reason=f"not run: app limit of {cfg.app_limit_s:g}s "
                                 "(wall time) spent"), 0.0) if wall_left <= 0.5 else \
            await _check_in_page(lane, item_id, check, cfg, load_timeout_s,
                                 min(cfg.check_limit_s * cfg.max_slowdown, wall_left))
    return out


async def _first_lane(lane: Lane, reads: list[Job], then: Job | None, own: list[Job], cfg: ChecksConfig,
                      load_timeout_s: float, wall_deadline: float) -> dict[int, Ran]:
    """The first lane: the shared document first (when there is one), then its share of the checks in their own."""
    shared = await _read_together(lane, reads, then, cfg, load_timeout_s, min(
        cfg.check_limit_s * cfg.max_slowdown, wall_deadline - time.monotonic())) if then is not None else {}
    return {**shared, **await _drain(lane, own, cfg, load_timeout_s, wall_deadline)}


def within_app_limit(ran: list[Ran], app_limit_s: float) -> list[CheckResult]:
    """Results with the app's limit of page time applied in rubric order (pure): a check that ends past it, or
    starts after it is spent, is inconclusive, whatever order the checks ran in."""
    out, spent = [], 0.0
    for rec, used in ran:
        if spent >= app_limit_s or spent + used > app_limit_s:
            rec = replace(rec, status="inconclusive", step=None, step_kind=None, observed=None, expected=None,
                          reason=f"app limit of {app_limit_s:g}s (page time) spent")
        out.append(rec)
        spent += used
    return out


async def run_checks(context: BrowserContext, html: str, checks: ItemChecks, cfg: ChecksConfig,
                     load_timeout_s: float = 5.0, page: Page | None = None,
                     idle: int | None = None) -> list[CheckResult]:
    """Every check of one app in ``cfg.parallel`` lanes at once, each check in a fresh document on the controlled
    clock, within the app's limit of page time (``app_limit_s``; ``max_slowdown`` times it in wall time); checks
    past it or past ``max_checks`` are inconclusive. The first lane runs in ``page`` (the load page the runtime
    hands over) when given; the lanes' pages close with the context. A lane past the first opens a tab, which
    costs the CPU of a check or two: only as many open as the runtime has ``idle`` app slots (a busy batch gains
    nothing from them, the last apps of a batch finish sooner); the verdicts do not depend on it.
    Two rounds: the shared document (``shared_document``) on the first lane beside the other checks on every lane;
    then, on every lane, the reads it did not decide, each in its own document."""
    await context.add_init_script(_SEED_JS % cfg.random_seed + _ISOLATE_JS)  # the runtime installed the clock
    wall_deadline = time.monotonic() + cfg.app_limit_s * cfg.max_slowdown
    jobs = list(enumerate(checks[:cfg.max_checks]))
    skipped = [CheckResult.of(i, "inconclusive", reason=f"not run: more than {cfg.max_checks} checks")
               for i, _c in checks[cfg.max_checks:]]
    if not jobs:
        return skipped
    reads, then = shared_document(jobs, cfg.share_reads)
    together = {k for k, _ in reads} | ({then[0]} if then is not None else set())
    own = [job for job in jobs if job[0] not in together]
    n = min(cfg.parallel, len(jobs), 1 + max(idle, 0) if idle is not None else cfg.parallel)
    lanes = [Lane(context, html) for _ in range(n)]
    if page is not None:
        await lanes[0].adopt(page)
    ran: dict[int, Ran] = {}
    for got in await asyncio.gather(_first_lane(lanes[0], reads, then, own, cfg, load_timeout_s, wall_deadline),
                                    *(_drain(lane, own, cfg, load_timeout_s, wall_deadline) for lane in lanes[1:])):
        ran.update(got)
    back = [job for job in reads if job[0] not in ran]
    for got in await asyncio.gather(*(_drain(lane, back, cfg, load_timeout_s, wall_deadline) for lane in lanes)):
        ran.update(got)
    return within_app_limit([ran[k] for k, _ in jobs], cfg.app_limit_s) + skipped


def not_run(checks: ItemChecks, reason: str) -> list[CheckResult]:
    """Results for checks that could not run (no app, app did not load, no browser): all inconclusive."""
    return [CheckResult.of(i, "inconclusive", reason=f"not run: {reason}") for i, _c in checks]


def run_item_checks(runtime: Any, html: str, checks: ItemChecks, cfg: ChecksConfig | None = None) -> list[CheckResult]:
    """One app's check results through ``runtime`` (a ``BrowserRuntime``): blocking, for tests and tools."""
    ev = runtime.check_many([html], checks=[CheckPlan(checks, cfg or ChecksConfig())])[0]
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
