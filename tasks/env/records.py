"""The records the browser's listeners and the checks write into an app's evidence (``RuntimeEvidence``): page
errors, console errors, requests our routes blocked or served from the mirror, and each executable check's result.

Each is frozen once written, carries HTML offsets (``tasks.env.evidence.shift_offsets`` moves them into the
response at output) and becomes a dict only there (``to_dict``: the ``rubricrl score`` contract's keys, in order).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, cast

from tasks.env.page import html_offset, stack_position


class Record:
    """A record whose dict is its fields in order (the contract's keys)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast(Any, self))  # every subclass is a dataclass


@dataclass(frozen=True)
class PageError(Record):
    """An uncaught error of the page, with its first in-page stack position mapped to an HTML offset."""

    name: str
    message: str
    stack: str = ""
    line: int | None = None
    column: int | None = None
    offset: int | None = None

    @classmethod
    def thrown(cls, html: str, exc: Any) -> "PageError":
        """The error a Playwright ``pageerror`` listener got (pure)."""
        return cls.at(html, getattr(exc, "name", "Error"), getattr(exc, "message", str(exc)),
                      getattr(exc, "stack", "") or "")

    @classmethod
    def at(cls, html: str, name: str, message: str, stack: str) -> "PageError":
        """An error with its place in the HTML read from its stack (pure)."""
        pos = stack_position(stack)
        if pos is None:
            return cls(name, message, stack[:2000])
        return cls(name, message, stack[:2000], pos[0], pos[1], html_offset(html, *pos))


@dataclass(frozen=True)
class ConsoleError(Record):
    """An error the app logged to the console on load, with its place in the HTML when the app's page logged it."""

    text: str
    line: int | None = None
    column: int | None = None
    offset: int | None = None


PHASES = ("load", "probe", "check")  # the moments of an app's session, in order


@dataclass(frozen=True)
class BlockedRequest(Record):
    """A request, navigation, websocket or popup our routes did not let through (``tasks.env.navigation``), with
    the moment it happened: ``phase`` load, probe or check, and the probe's ``action`` then."""

    url: str
    resource_type: str
    kind: str  # request | navigation | websocket | popup
    outcome: str  # refused | environment_gap | ...: tasks.env.navigation
    reason: str
    spec: str | None = None
    phase: str = "load"
    action: int | None = None

    @property
    def order(self) -> tuple[int, int, str, str, str, str]:
        """Where it stands among an app's blocked requests: by moment and action, then by what was asked. Requests
        of one moment reach the route in any order (a fetch and a websocket at load), and the evidence, the findings
        made from it and their tokens' weights must not depend on which came first."""
        return (PHASES.index(self.phase), -1 if self.action is None else self.action, self.url, self.kind,
                self.resource_type, self.outcome)


@dataclass(frozen=True)
class CdnServed(Record):
    """A library request the CDN mirror answered, and the file it served (relative to the working directory)."""

    url: str
    file: str


@dataclass(frozen=True)
class CheckResult:
    """One item's executable check result (``tasks.env.checks``; offsets into the HTML). ``clock``: controlled
    (the environment's) or page (the page's own, ``clock_reason`` says why); None when the check did not run."""

    item_id: str
    status: str  # passed | failed | inconclusive
    step: int | None = None
    step_kind: str | None = None
    reason: str = ""
    observed: str | None = None
    expected: str | None = None
    errors: tuple[PageError, ...] = ()
    duration_s: float = 0.0
    clock: str | None = None
    clock_reason: str | None = None

    @classmethod
    def of(cls, item_id: str, status: str, *, step: int | None = None, kind: str | None = None, reason: str = "",
           observed: Any = None, expected: Any = None, errors: list[PageError] | None = None, duration_s: float = 0.0,
           clock: str | None = None, clock_reason: str | None = None) -> "CheckResult":
        """A result with what it reports cut to the sizes the contract keeps (pure)."""
        short = lambda v: None if v is None else str(v)[:500]  # noqa: E731
        return cls(item_id, status, step, kind, reason[:1000], short(observed), short(expected),
                   tuple(list(errors or [])[:10]), round(duration_s, 3), clock, clock_reason)

    def moved(self, h: int) -> "CheckResult":
        """This result with its errors' HTML offsets moved into the response (+``h``) (pure)."""
        return replace(self, errors=tuple(e if e.offset is None else replace(e, offset=e.offset + h)
                                          for e in self.errors))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "errors": [e.to_dict() for e in self.errors]}


@dataclass(frozen=True)
class DroppedFinding(Record):
    """A judge's rubric finding the diagnosis left out (``judge_diagnosis.normalize_diagnosis``), kept for the record."""

    reason: str  # unknown rubric id | duplicate item id (lower or equal severity)
    severity: str
    item_id: str | None


@dataclass(frozen=True)
class LoadErrorsVerdict:
    """Whether the uncaught errors at load block the app, and why (``severity.load_errors_verdict``)."""

    blocking: bool
    why: str


# The keys each kind of failure has in the probe's summary (the ``rubricrl score`` contract), in their order.
FAILURE_KEYS = {"error": ("kind", "action", "action_kind", "target", "label", "name", "sync", "message", "offset"),
                "hang": ("kind", "action", "action_kind", "target", "label", "offset"),
                "reload": ("kind", "action", "action_kind", "target", "label", "form", "offset")}


@dataclass(frozen=True)
class Failure:
    """A failure an interaction caused (``probe.interaction_failures``): an uncaught error, a hang, or a submit that
    reloads the app, with the action, its control and an HTML offset when known; ``blocking`` and ``why`` once
    ``severity.classify_failures`` has judged it (None before)."""

    kind: str  # error | hang | reload
    action: int | None = None
    action_kind: str | None = None
    target: str | None = None
    label: str | None = None
    name: str | None = None  # an error's
    sync: bool | None = None  # an error's: thrown inside the handler (True) or after it returned (False)
    message: str | None = None  # an error's
    form: str | None = None  # a reload's
    offset: int | None = None
    blocking: bool | None = None
    why: str | None = None
    effect_shown: bool = False  # thrown after the control's effect showed, outside its handler

    @property
    def control(self) -> str:
        """The control as a person names it: its label, else its target, else the page."""
        return self.label or self.target or "the page"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FAILURE_KEYS[self.kind]}
