"""The interaction probe's evidence (``ProbeRecord``) and the records it holds: the actions the probe ran, the
errors the page threw, the listeners it registered, the dialogs it opened, the navigations it tried, the controls
that did nothing, its motion (``Liveness``, from two ``Sample``), its canvases and the hang that stopped it.

Each is built once from probe.js's JSON where the probe collects it (``tasks.env.probe``), read by attribute, and
becomes a dict again only at output (``to_dict``: the ``interaction.record`` of ``rubricrl score``, its keys in
their order); ``from_dict`` reads that JSON back (the tests' fixtures, stored evidence).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from tasks.env.records import Record

T = TypeVar("T", bound="ProbeItem")


def _json(value: Any) -> Any:
    """Tuples back to lists (JSON's arrays), records to their dicts."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


class ProbeItem(Record):
    """A record of the probe's whose JSON may lack keys (older evidence, the tests' fixtures): they take their
    defaults."""

    def to_dict(self) -> dict[str, Any]:
        return _json(super().to_dict())

    @classmethod
    def from_dict(cls: type[T], d: dict[str, Any]) -> T:
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Submit(ProbeItem):
    """A form submit an action started and nobody prevented: the form, its ``action`` attribute, its ``<form``."""

    form: str | None = None
    action_attr: str | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Action(ProbeItem):
    """One action the probe ran: what it used, how it went (``outcome``), what changed (``changed``: the codes of
    ``probe.CHANGES``), how many errors it raised, its submit, and where its control's handler is in the HTML."""

    i: int
    kind: str  # click | fill | select | drag | key
    target_desc: str | None = None
    target_index: int | None = None
    label: str | None = ""
    tag: str | None = None
    handled: bool = False  # the element has a click or drag listener
    key: str | None = None
    outcome: str | None = None  # ok | gone (its element left the page) | probe_error: ...
    changed: tuple[str, ...] = ()
    errors: int = 0
    submit: Submit | None = None
    handler_offset: int | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Action":
        sub = d.get("submit")
        return replace(super().from_dict(d), changed=tuple(d.get("changed") or ()),
                       submit=Submit.from_dict(sub) if sub else None)


@dataclass(frozen=True)
class ProbeError(ProbeItem):
    """An error or rejection the page threw while the probe ran, with the action then (``probe.IDLE`` before the
    first, ``probe.AFTER`` after the run) and its place in the HTML. ``caused``: raised by that action and not by
    the app while idle, nor a request the sandbox blocked; None for an idle error (not asked, so not in its JSON)."""

    action: int | None = None
    sync: bool | None = None  # thrown inside the handler (True) or after it returned (False)
    kind: str = "error"  # error | rejection
    name: str | None = None
    message: str = ""
    stack: str | None = None
    line: int | None = None
    column: int | None = None
    offset: int | None = None
    caused: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.caused is None:
            del d["caused"]
        return d


@dataclass(frozen=True)
class Listener(ProbeItem):
    """An event listener the page registered (``via``: addEventListener, an ``on*`` property or attribute), with
    its handler's place in the HTML."""

    type: str
    target: str | None = None
    via: str | None = None
    offset: int | None = None


@dataclass(frozen=True)
class AnsweredDialog(ProbeItem):
    """A dialog the page opened (answered at once), with the action then."""

    action: int | None = None
    type: str = "alert"
    message: str = ""


@dataclass(frozen=True)
class Navigation(ProbeItem):
    """A navigation away the route stopped, with the action then."""

    url: str
    action: int | None = None


@dataclass(frozen=True)
class DeadControl(ProbeItem):
    """A control the probe clicked that ran cleanly and changed nothing (``probe.dead_controls``)."""

    action: int | None = None
    target: str | None = None
    label: str | None = None
    has_handler: bool = False


@dataclass(frozen=True)
class Sample(ProbeItem):
    """One in-page look at motion (probe.js ``snapshot``): animation frames, draw calls and DOM mutations counted
    since load, a hash of the canvas pixels, the CSS/Web animations running, and the page's clock (``t``, ms: the
    controlled one where the page runs on it). Only ``Liveness`` is kept: two samples' difference."""

    rafs: int = 0
    draws: int = 0
    mutations: int = 0
    canvas: int = 0
    animations: int = 0
    t: float | None = None


@dataclass(frozen=True)
class Liveness(ProbeItem):
    """Motion between two in-page samples ``gap_s`` apart (``probe.liveness``): animation frames, draw calls and
    DOM mutations counted, canvas pixels changed, CSS/Web animations running; ``visual_change`` says whether any
    of it showed, ``animated`` also counts the frames and draws."""

    rafs: int = 0
    draws: int = 0
    mutations: int = 0
    canvas_change: bool = False
    running_animations: int = 0
    gap_s: float | None = None
    visual_change: bool = False
    animated: bool = False

    @property
    def looped(self) -> bool:
        """The app's own loop ran: it requested animation frames or drew."""
        return bool(self.rafs or self.draws)


@dataclass(frozen=True)
class Canvas(ProbeItem):
    """A visible canvas after load and settle (probe.js ``canvases``): ``blank`` when nothing is drawn on it (None:
    a WebGL one, not read), with the ids of it and its ancestors."""

    ids: tuple[str, ...] = ()
    blank: bool | None = None
    context: str | None = None  # 2d | webgl | ... | None: no script gave it one

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Canvas":
        return cls(tuple(d.get("ids") or ()), d.get("blank"), d.get("context"))


@dataclass(frozen=True)
class Hang(ProbeItem):
    """The page stopped answering: during an action (its control and handler), or outside any (``action`` None)."""

    action: int | None = None
    action_kind: str | None = None
    target: str | None = None
    label: str | None = None
    offset: int | None = None


ITEMS: dict[str, type[ProbeItem]] = {"actions": Action, "errors": ProbeError, "idle_errors": ProbeError,
                                     "listeners": Listener, "dialogs": AnsweredDialog, "navigations": Navigation,
                                     "dead_controls": DeadControl, "canvases": Canvas}
MOTION = ("liveness", "loop_after")  # a Liveness, or {} in the JSON when none was sampled


@dataclass
class ProbeRecord:
    """What using the app showed. ``status``: ok | hung | navigated | skipped | error. The probe fills it in as it
    goes (``tasks.env.probe.run_probe``); what it holds is frozen once built."""

    status: str = "skipped"
    actions: list[Action] = field(default_factory=list)
    planned: int = 0
    errors: list[ProbeError] = field(default_factory=list)
    idle_errors: list[ProbeError] = field(default_factory=list)
    listeners: list[Listener] = field(default_factory=list)
    dialogs: list[AnsweredDialog] = field(default_factory=list)
    navigations: list[Navigation] = field(default_factory=list)
    dead_controls: list[DeadControl] = field(default_factory=list)
    liveness: Liveness | None = None  # None: no idle sample (the page did not answer it)
    canvases: list[Canvas] = field(default_factory=list)  # drawn or blank, before any action
    loop_after: Liveness | None = None  # motion after the run, sampled when an action threw
    hang: Hang | None = None
    duration_s: float = 0.0
    error: str | None = None
    clock: str | None = None  # controlled (the environment's clock) | page (the page's own, clock_reason says why)
    clock_reason: str | None = None
    cut: str | None = None  # wall: the wall-time cap stopped the actions before the plan's end (the machine's load)

    def action(self, i: int | None) -> Action | None:
        """The action of this index (None: no action, or the resize after the plan)."""
        return self.actions[i] if i is not None and 0 <= i < len(self.actions) else None

    def to_dict(self) -> dict[str, Any]:
        return {k: {} if k in MOTION and getattr(self, k) is None else _json(getattr(self, k))
                for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProbeRecord":
        """The record from its JSON (``to_dict``, the ``interaction.record`` of ``rubricrl score``)."""
        kw = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for k, item in ITEMS.items():
            if k in kw:
                kw[k] = [item.from_dict(x) for x in kw[k] or []]
        for k in MOTION:
            if k in kw:
                kw[k] = Liveness.from_dict(kw[k]) if kw[k] else None
        if kw.get("hang"):
            kw["hang"] = Hang.from_dict(kw["hang"])
        return cls(**kw)
