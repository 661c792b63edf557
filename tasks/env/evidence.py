"""What the browser saw of one app (``RuntimeEvidence``) and the gate verdicts read from it: how the app failed
our own gate (on load, or by a blocking interaction failure), the library requests the mirror could not serve
before it failed (an environment gap: no verdict), and whether the verdict could be the machine's load.

An app's session (``BrowserRuntime._session``) is a sequence of steps, each returning a typed record: the load
(``LoadRecord``: load, settle, the page as loaded), the probe (``ProbeRecord``, ``tasks.env.probe_records``) and the checks
(``CheckRecord``); ``RuntimeEvidence.record`` keeps each in the app's evidence, beside what the route and the
page's listeners record for the whole session (requests, errors, console), and ``RuntimeEvidence.verdict`` reads
the gate from them once."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from schemas.config.env import RuntimeConfig
from tasks.env.pagetime import LAGGED
from tasks.env.probe import summarize
from tasks.env.probe_records import ProbeRecord
from tasks.env.records import (BlockedRequest, CdnServed, CheckResult, ConsoleError, DroppedFinding, Failure,
                               LoadErrorsVerdict, PageError)
from tasks.env.severity import classify_failures, load_errors_verdict

if TYPE_CHECKING:
    from tasks.env.static import SourceError, StaticEvidence


@dataclass(frozen=True)
class RuntimeVerdict:
    """The runtime gate read from one app's evidence (``RuntimeEvidence.verdict``), once."""

    failure: str | None  # load | interaction | None (no failure, or no verdict)
    failures: list[Failure]  # the probe's failures, each classified (blocking, why); [] when they cannot fail
    gaps: list[BlockedRequest]  # library requests the mirror could not serve before the app failed
    valid: bool | None  # None: no verdict (no browser, or an environment gap)


# Every key under which an evidence record carries an offset into the HTML application (errors, handlers, source
# spans): the evidence keeps HTML offsets and ``shift_offsets`` moves them all into the response once, at output.
OFFSET_KEYS = frozenset({"offset", "handler_offset", "start", "end"})


def shift_offsets(value: Any, h: int) -> Any:
    """A copy of the evidence with every HTML offset moved into the response (+h, paper G.3) (pure)."""
    if isinstance(value, dict):
        return {k: (v + h if k in OFFSET_KEYS and isinstance(v, int) and not isinstance(v, bool)
                    else shift_offsets(v, h)) for k, v in value.items()}
    if isinstance(value, list):
        return [shift_offsets(v, h) for v in value]
    return value


@dataclass(frozen=True)
class LoadRecord:
    """The session's load step (``BrowserRuntime._load``): how loading and settling the app ended."""

    status: str  # ok | page_error | blank | load_timeout | unresponsive | reload_loop | crashed
    blank_body: bool | None = None  # None: not looked at (the load ended first)


@dataclass(frozen=True)
class CheckRecord:
    """The session's last step (``tasks.env.checks``): each executable check's result, or why they crashed (each
    check is then inconclusive, saying so)."""

    results: list[CheckResult] = field(default_factory=list)
    error: str | None = None


FAILED = ("page_error", "load_timeout", "unresponsive", "crashed", "reload_loop")  # statuses that fail the gate
CHECKED = ("ok", "page_error", "blank")  # statuses after which an app's executable checks run (its page is there)


@dataclass
class RuntimeEvidence:
    """What happened when the app was loaded. Offsets are into the HTML application."""

    # ok | page_error | load_timeout | unresponsive | crashed | reload_loop | blank | skipped | unavailable
    status: str = "ok"
    page_errors: list[PageError] = field(default_factory=list)
    console_errors: list[ConsoleError] = field(default_factory=list)
    blocked_requests: list[BlockedRequest] = field(default_factory=list)  # tasks.env.navigation.record
    cdn_served: list[CdnServed] = field(default_factory=list)
    refused_popups: int = 0  # window.open calls no user gesture opened (refused, as a browser does)
    blank_body: bool | None = None
    duration_s: float = 0.0
    error: str | None = None  # an environment failure (no browser): no verdict, never a made-up one
    check_results: list[CheckResult] = field(default_factory=list)  # the session's last step (tasks.env.checks)
    checks_error: str | None = None  # the checks crashed: each is inconclusive, saying this
    interaction: ProbeRecord | None = None  # what the probe saw (serialised at output: Evidence.to_json)
    rechecked_from: str | None = None  # the status beside other apps, when a re-check alone replaced it
    no_verdict: str | None = None  # the hold's end that left the app unjudged, the machine's doing (NO_VERDICT_ENDS)

    def record(self, step: "LoadRecord | CheckRecord") -> None:
        """Keep a step's record in the app's evidence. A failure a listener saw first (a crash) stands."""
        if isinstance(step, LoadRecord):
            if self.status == "ok":
                self.status = step.status
            self.blank_body = step.blank_body
        else:
            self.check_results, self.checks_error = list(step.results), step.error

    def verdict(self, cfg: RuntimeConfig, failures: list[Failure] | None = None) -> "RuntimeVerdict":
        """The runtime gate's verdict, read once from this evidence (the severity of every interaction failure
        classified once, or ``failures`` as ``Evidence.read`` classified them): how the app failed, the
        environment gaps that void the verdict, and validity."""
        if self.status in ("skipped", "unavailable"):
            return RuntimeVerdict(None, [], [], None)
        if failures is None:
            failures = classify_failures(self.interaction, cfg.probe.error_rule)
        classified = failures if cfg.probe.errors_fail else []
        load = self.load_errors(cfg)
        confined = self.status == "page_error" and load is not None and not load.blocking
        failure = None
        if (self.status in FAILED and not confined) or (self.blank_body and cfg.blank_body_fails) or \
                (self.console_errors and cfg.console_errors_fail):
            failure = "load"
        elif any(f.blocking for f in classified):
            failure = "interaction"
        gaps = self._gaps(failure, classified)
        return RuntimeVerdict(failure, classified, gaps, None if gaps else failure is None)

    def _gaps(self, failure: str | None, classified: list[Failure]) -> list[BlockedRequest]:
        """The library requests the mirror could not serve before the app failed (none when it did not fail):
        the app may work in a user's browser, so the environment cannot judge it (paper B.4: an evaluator
        failure is a missing reward). An app that works despite such a request keeps its verdict."""
        if failure is None:
            return []
        last = max((f.action or 0 for f in classified if f.blocking), default=0) \
            if failure == "interaction" else None
        out: dict[str, BlockedRequest] = {}  # each URL once
        for b in self.blocked_requests:
            before = b.phase == "load" or (last is not None and b.action is not None and b.action <= last)
            if b.outcome == "environment_gap" and before:
                out.setdefault(b.url, b)
        return list(out.values())

    def failure(self, cfg: RuntimeConfig) -> str | None:
        """How the app failed our own gate: "load" (load, settle, the page as loaded; an uncaught error at load
        unless ``load_errors`` says the app still answers), "interaction" (a failure the probe caused that blocks,
        ``tasks.env.severity``), or None (no failure, or no verdict)."""
        return self.verdict(cfg).failure

    def load_errors(self, cfg: RuntimeConfig) -> LoadErrorsVerdict | None:
        """Whether the uncaught errors at load block the app (``severity.load_errors_verdict``); None without any."""
        if self.status != "page_error":
            return None
        return load_errors_verdict(self.interaction, cfg.probe.load_error_rule if cfg.probe.enabled else "gate")

    def environment_gaps(self, cfg: RuntimeConfig) -> list[BlockedRequest]:
        """``verdict(cfg).gaps``."""
        return self.verdict(cfg).gaps

    def runtime_valid(self, cfg: RuntimeConfig) -> bool | None:
        """Our own verdict; None when the browser gave none (skipped, unavailable) or the app failed after a
        library request the mirror could not serve (an environment gap)."""
        return self.verdict(cfg).valid

    @property
    def load_bound(self) -> str | None:
        """Why load on the machine could have made this verdict (checked again alone before it stands): the load
        timed out or stopped answering, the hard limit came while the machine starved the page (``starved``, ``late``:
        no verdict), the probe found the page hung, its actions were cut at the wall-time cap (fewer controls used,
        so "most controls failing" is decided on another count), or it ran on the page's own clock because frames
        lagged (a renderer sharing the cores with others: its budget passes in wall time, and fewer actions run);
        None when nothing was."""
        if self.status in ("load_timeout", "unresponsive"):
            return self.status
        if self.status == "unavailable" and self.no_verdict is not None:
            return self.no_verdict
        probe = self.interaction
        if probe is not None and probe.status == "hung":
            return "probe_hung"
        if probe is not None and probe.cut == "wall":
            return "probe_cut"
        if probe is not None and probe.clock == "page" and (probe.clock_reason or "").startswith(LAGGED):
            return "probe_lagged"
        return None

    @property
    def timed_out(self) -> bool:
        """A verdict that load on the machine could have caused (``load_bound``)."""
        return self.load_bound is not None


@dataclass(frozen=True)
class Evidence:
    """One app's evidence, from the browser to the reward (paper 3.3): the static evidence (tree-sitter), what the
    browser saw (``RuntimeEvidence``, with its load, probe and check records), the probe's failures with their
    severity and whether the errors at load block, and the runtime gate's verdict, each read once (``read``). The
    judge, the offline judge and the reward read it by attribute; it is serialised once, at output (``to_json``:
    the ``rubricrl score`` contract's ``evidence``, which the service and the score tables read)."""

    static: "StaticEvidence | None" = None
    runtime: RuntimeEvidence | None = None
    failures: tuple[Failure, ...] = ()  # the probe's failures, each classified (blocking, why)
    load_errors: LoadErrorsVerdict | None = None  # whether the errors at load block (``RuntimeEvidence.load_errors``)
    verdict: RuntimeVerdict | None = None  # None: the browser did not run

    @classmethod
    def read(cls, static: "StaticEvidence | None", runtime: RuntimeEvidence | None, cfg: RuntimeConfig) -> "Evidence":
        if runtime is None:
            return cls(static)
        failures = classify_failures(runtime.interaction, cfg.probe.error_rule)
        return cls(static, runtime, tuple(failures), runtime.load_errors(cfg), runtime.verdict(cfg, failures))

    @property
    def syntax_errors(self) -> "list[SourceError]":
        return list(self.static.errors) if self.static is not None else []

    @property
    def check_results(self) -> list[CheckResult]:
        """The executable checks' results (HTML offsets)."""
        return list(self.runtime.check_results) if self.runtime is not None else []

    @property
    def runtime_status(self) -> str | None:
        """How the browser's run ended (``RuntimeEvidence.status``); None: no application to load."""
        return self.runtime.status if self.runtime is not None else None

    @property
    def gaps(self) -> list[BlockedRequest]:
        """The environment gaps that leave the verdict to nobody (``RuntimeVerdict.gaps``)."""
        return self.verdict.gaps if self.verdict is not None else []

    @property
    def unjudged(self) -> str | None:
        """Why the environment cannot judge the app, a missing reward and never a verdict (paper B.4: an evaluator
        failure): ``environment_gap`` (it failed after a library request the mirror could not serve) or
        ``browser_unavailable`` (no browser verdict: none could run, or the machine starved the page alone too);
        None when it can."""
        if self.gaps:
            return "environment_gap"
        return "browser_unavailable" if self.runtime is not None and self.runtime.status == "unavailable" else None

    def to_json(self, offset: int, dropped: list[DroppedFinding]) -> dict[str, Any]:
        """The evidence of the ``rubricrl score`` contract, offsets moved from the HTML into the response (+``offset``,
        the application's place in it) once, here; ``dropped``: the judge's findings that named no item."""
        st, rt = self.static, self.runtime
        inter = rt.interaction if rt else None
        ev: dict[str, Any] = {"syntax_errors": [asdict(e) for e in self.syntax_errors],
                              "page_errors": [e.to_dict() for e in rt.page_errors] if rt else [],
                              "console_errors": [e.to_dict() for e in rt.console_errors] if rt else [],
                              "blocked_requests": [b.to_dict() for b in rt.blocked_requests] if rt else [],
                              "environment_gaps": [b.to_dict() for b in self.gaps],
                              "refused_popups": rt.refused_popups if rt else 0,
                              "cdn_served": [s.to_dict() for s in rt.cdn_served] if rt else [],
                              "runtime_status": rt.status if rt else None,
                              "blank_body": rt.blank_body if rt else None,
                              "runtime_error": rt.error if rt else None,
                              "runtime_rechecked_from": rt.rechecked_from if rt else None,
                              # the probe's summary (failures, dead controls, liveness) first, then its whole record
                              "interaction": None if inter is None else {**summarize(inter), "record": inter.to_dict()},
                              "external_scripts": list(st.external_scripts) if st else [],
                              "checks": [c.to_dict() for c in self.check_results],
                              "dropped_findings": [d.to_dict() for d in dropped]}
        return shift_offsets(ev, offset)
