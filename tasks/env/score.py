"""The whole evaluation for responses (paper 3.3): format -> source -> runtime -> rubric, then the reward.

For a batch: extract each application (offset h), parse it with tree-sitter, load all of them in the
shared headless browser, judge each one through the provider as soon as its own load ends (bounded
concurrency: a judge call never waits for the rest of the batch's loads), then combine:
our own evidence fails a gate whatever the judge says; otherwise the judge's layer gates decide; a
gate nobody decided (judge failed) leaves the reward missing, and so does an app that failed in the
browser after a library request the CDN mirror could not serve (an environment gap: it may work in a
user's browser, so it is not judged; ``missing_reason`` and ``evidence.environment_gaps`` say so), and so does an app
the browser gave no verdict on (``browser_unavailable``: no browser, or the machine starved its page alone too;
``evidence.runtime_error`` says why). The output dict is the
``rubricrl score`` JSON contract; offsets in it are character offsets into the response.

Run: ``score_response(task, response_text, provider=get_provider("offline"))`` or ``score_batch(...)``.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

from schemas.config.attribution import AttributionConfig
from schemas.config.env import EnvConfig
from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import Task, judge_payload
from tasks.attribution.api import AttributionTrace, attribute
from tasks.env.checks import CheckPlan, not_run
from tasks.env.extract import Extraction, extract_html
from tasks.env.judge import build_judge_request
from tasks.env.judge_diagnosis import (ScoredFinding, findings_list, layer_gates, normalize_diagnosis, parse_diagnosis,
                                       rubric_severities, with_observed_findings)
from tasks.env.rewards import reward, rubric_score
from tasks.env.runtime import BrowserRuntime, shared_runtime
from tasks.env.evidence import Evidence, RuntimeEvidence
from tasks.env.records import CheckResult, DroppedFinding
from tasks.env.static import StaticEvidence, check_source
from tasks.llm.base import LLMResult, Provider
from tasks.progress import Progress


@dataclass
class ScoreInput:
    key: str  # the response's stable id (rollout id)
    task: Task
    response: str
    diagnosis: Diagnosis | dict[str, Any] | None = None  # given: no LLM call


@dataclass(kw_only=True)
class ScoreResult:
    key: str
    query_id: str
    format_valid: bool
    source_valid: bool | None
    runtime_valid: bool | None
    reward: float | None
    reward_kind: str
    html_offset: int | None
    findings: list[ScoredFinding]
    evidence: Evidence  # HTML offsets: evidence_json moves them into the response, at output
    judge: JudgeRecord
    gates: dict[str, bool | None] = field(default_factory=dict)
    rubric_score: float | None = None
    html_length: int = 0
    attribution: AttributionTrace | None = None  # spans behind the findings (paper B.3), source coordinates
    check_results: list[CheckResult] = field(default_factory=list)  # per checked item; response offsets
    missing_reason: str | None = None  # why reward is None: environment_gap | browser_unavailable | judge
    undecided: list[str] = field(default_factory=list)  # items no evidence spoke to: out of the rubric score
    dropped: list[DroppedFinding] = field(default_factory=list)  # the judge's findings that named no item

    def evidence_json(self) -> dict[str, Any]:
        """The contract's ``evidence`` (response offsets), made here from the typed evidence, at output."""
        return self.evidence.to_json(self.html_offset or 0, self.dropped)

    def rubric_severities(self) -> dict[str, str]:
        """item id -> severity of its rubric finding."""
        return {f.item_id: f.severity for f in self.findings if f.layer == "rubric_alignment" and f.item_id}

    def to_json(self) -> dict[str, Any]:
        """The ``rubricrl score`` contract (its keys first), plus the judge record and the gates."""
        return {"format_valid": self.format_valid, "source_valid": self.source_valid,
                "runtime_valid": self.runtime_valid, "reward": self.reward, "html_offset": self.html_offset,
                "findings": [f.to_dict() for f in self.findings], "evidence": self.evidence_json(), "reward_kind": self.reward_kind,
                "rubric_score": self.rubric_score, "missing_reason": self.missing_reason, "gates": self.gates,
                "judge": self.judge.to_dict(), "undecided": self.undecided}


def _runtime_for(cfg: EnvConfig, runtime: BrowserRuntime | None) -> BrowserRuntime | None:
    if not cfg.runtime.enabled:
        return None
    return runtime or shared_runtime(cfg.runtime)


_CALL = ("cached", "input_tokens", "output_tokens")  # what only a judge call made has
UNJUDGED = {  # why no judge call was made for an app the environment cannot judge (``Evidence.unjudged``)
    "environment_gap": "environment gap: the app failed after a library request the CDN mirror could not serve",
    "browser_unavailable": "no browser verdict: the environment could not run the app (runtime_error says why)"}


@dataclass(frozen=True)
class JudgeRecord:
    """Who judged an app and how (the ``judge`` of ``rubricrl score``): a diagnosis given, no call (``error`` says
    why not), or a call, with its attempts and error, whether the cache answered it, and its tokens."""

    provider: str | None
    model: str | None = None
    attempts: int = 0
    error: str | None = None
    cached: bool | None = None  # None: no call was made
    input_tokens: int | None = None
    output_tokens: int | None = None

    @classmethod
    def of(cls, res: LLMResult | None, given: bool, unjudged: str | None = None) -> "JudgeRecord":
        if given:
            return cls("given")
        if res is None:
            why = UNJUDGED.get(unjudged or "", "gates failed on our evidence")
            return cls(None, error=f"not judged ({why})")
        return cls(res.provider, res.model, res.attempts, res.error, res.cached, res.usage.input_tokens,
                   res.usage.output_tokens)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if self.cached is not None or k not in _CALL}


def combine(inp: ScoreInput, ex: Extraction | None, ev: Evidence, diag: Diagnosis | None,
            dropped: list[DroppedFinding], judge: JudgeRecord, cfg: EnvConfig, kind: str,
            attribution: AttributionConfig | None = None) -> ScoreResult:
    """Gates and reward from our evidence and the (normalized) diagnosis; pure."""
    levels = inp.task.rubric.level_of()
    st, rt = ev.static, ev.runtime
    if ex is None or st is None:
        r = reward(kind, False, None, None, levels, None, cfg.reward)
        return ScoreResult(key=inp.key, query_id=inp.task.query_id, format_valid=False, source_valid=None,
                           runtime_valid=None, reward=r, reward_kind=kind, html_offset=None, findings=[],
                           evidence=ev, judge=judge, dropped=dropped,
                           check_results=not_run(inp.task.rubric.checks(), "no HTML application in the response"))
    gates: dict[str, bool | None] = dict(layer_gates(diag)) if diag else \
        {"static_check": None, "code_simulation": None, "rubric_alignment": None}
    verdict = ev.verdict  # the runtime gate, read once
    if diag is not None and verdict is not None and cfg.runtime.probe.errors_fail:
        # What the browser saw an interaction do is a finding whoever judged (an LLM may not run the code).
        diag = with_observed_findings(diag, ex.html, verdict.failures, judge_payload(inp.task.rubric))
    rt_valid = verdict.valid if verdict else None
    gates["tree_sitter"] = st.source_valid
    gates["browser"] = rt_valid
    source_valid = False if not st.source_valid else gates["static_check"]
    # An environment gap or a browser with no verdict leaves runtime validity to nobody (``Evidence.unjudged``): the
    # judge reads the same source the browser could not run.
    runtime_valid = None if ev.unjudged else False if rt_valid is False else gates["code_simulation"]
    severities = rubric_severities(diag) if diag else None
    undecided = list(diag.undecided) if diag else []
    score = rubric_score(levels, severities, cfg.reward, undecided) if severities is not None else None
    r = reward(kind, True, source_valid, runtime_valid, levels, severities, cfg.reward, undecided)
    trace = attribute(inp.response, ex.offset, diag, attribution) if diag is not None else None
    spans = {f.key: {"direct_spans": f.direct_spans_response(), "context_spans": f.context_spans_response()}
             for f in trace.findings} if trace is not None else None
    return ScoreResult(key=inp.key, query_id=inp.task.query_id, format_valid=True, source_valid=source_valid,
                       runtime_valid=runtime_valid, reward=r, reward_kind=kind, html_offset=ex.offset,
                       findings=findings_list(diag, spans), evidence=ev, judge=judge, gates=gates,
                       rubric_score=score, html_length=len(ex.html), attribution=trace,
                       check_results=item_check_results(inp, rt, [c.moved(ex.offset) for c in ev.check_results], cfg),
                       missing_reason=missing_reason(r, ev), undecided=undecided, dropped=dropped)


def missing_reason(r: float | None, ev: Evidence) -> str | None:
    """Why a reward is missing (pure): the environment could not judge the app (``Evidence.unjudged``), or the judge
    failed."""
    if r is not None:
        return None
    return ev.unjudged or "judge"


def _check_plan(inp: ScoreInput, cfg: EnvConfig) -> CheckPlan | None:
    checks = inp.task.rubric.checks()
    return CheckPlan(checks, cfg.checks) if checks and cfg.checks.enabled else None


def item_check_results(inp: ScoreInput, rt: RuntimeEvidence | None, ran: list[CheckResult],
                       cfg: EnvConfig) -> list[CheckResult]:
    """One result per checked item (response offsets): what ran, else inconclusive saying why not (pure)."""
    checks = inp.task.rubric.checks()
    if not checks or ran:
        return ran
    why = ("env.checks.enabled is false" if not cfg.checks.enabled else "no browser (runtime skipped)"
           if rt is None or rt.status == "skipped" else f"the checks crashed: {rt.checks_error}" if rt.checks_error
           else f"the app did not load (runtime status {rt.status})")
    return not_run(checks, why)


@dataclass
class _App:
    """One response on its way through the batch: its evidence as it comes in, then its judgment."""

    inp: ScoreInput
    ex: Extraction | None
    st: StaticEvidence | None
    rt: RuntimeEvidence | None = None
    evidence: Evidence = field(default_factory=Evidence)  # read once the browser's evidence is in
    diag: Diagnosis | None = None
    dropped: list[DroppedFinding] = field(default_factory=list)
    judge: JudgeRecord = field(default_factory=lambda: JudgeRecord.of(None, False))

    def take(self, diag: Any, given: bool, res: LLMResult | None = None) -> None:
        """The diagnosis, given or judged, normalised against the rubric."""
        rubric = self.inp.task.rubric
        self.diag, self.dropped = (parse_diagnosis(diag, rubric) if isinstance(diag, dict)
                                   else normalize_diagnosis(diag, rubric))
        self.judge = JudgeRecord.of(res, given)
        if res is not None and res.provider != "offline":  # a model judge keeps the paper's rule: no finding is met
            self.diag = self.diag.model_copy(update={"undecided": []})


def _judge_request(app: _App, provider: Provider | None, cfg: EnvConfig) -> Any:
    """The app's judge request once its browser evidence is in, which is read here, once (every app with an
    application comes here); None when no call is needed (a diagnosis given, a failure decided locally, an
    environment gap)."""
    inp, st = app.inp, app.st
    assert st is not None and app.ex is not None
    app.evidence = Evidence.read(st, app.rt, cfg.runtime)
    if inp.diagnosis is not None:
        app.take(inp.diagnosis, given=True)
        return None
    verdict = app.evidence.verdict
    unjudged = app.evidence.unjudged if st.source_valid else None  # no reward to judge for
    locally_failed = not st.source_valid or (verdict is not None and verdict.valid is False)
    if unjudged or (locally_failed and not cfg.judge.judge_invalid_apps):
        app.judge = JudgeRecord.of(None, False, unjudged)
        return None
    if provider is None:
        raise ValueError("no judge provider and no diagnosis given; pass provider=get_provider(...) or a diagnosis")
    return build_judge_request(inp.task, app.ex.html, key=inp.key, evidence=app.evidence, cfg=cfg.judge)


def _with_evidence(apps: list[_App], todo: list[int], checked: dict[Future, int]) -> Any:
    """The apps in the order their browser evidence comes in (all at once without a browser)."""
    if not checked:
        yield from todo
        return
    for f in as_completed(checked):
        apps[checked[f]].rt = f.result()
        yield checked[f]


def _submit_judge(pool: ThreadPoolExecutor, provider: Provider | None, request: Any, tick: Any,
                  rt: RuntimeEvidence | None) -> Future | None:
    """The app's judge call on ``pool`` (None when no call is needed); ``tick`` counts the app, with the checks
    its browser run ran, once it is scored."""
    ran = len(rt.check_results) if rt is not None else 0
    if request is None:
        tick(1, checks_run=ran)
        return None
    assert provider is not None  # a request is built only with a provider (_judge_request)
    call = pool.submit(provider.complete, request)
    call.add_done_callback(lambda _f: tick(1, checks_run=ran))
    return call


def _browse(apps: list[_App], todo: list[int], cfg: EnvConfig, runtime: BrowserRuntime | None) -> dict[Future, int]:
    """Start every app's browser check (each future answers one app); without a browser the runtime is skipped."""
    engine = _runtime_for(cfg, runtime) if todo else None
    if engine is None:
        for j in todo:
            apps[j].rt = RuntimeEvidence(status="skipped")
        return {}
    plans = [_check_plan(apps[j].inp, cfg) for j in todo]
    htmls = [ex.html for j in todo if (ex := apps[j].ex) is not None]
    assert len(htmls) == len(todo)  # todo: the apps with an application (score_batch)
    futures = engine.check_each(htmls, checks=plans)
    return dict(zip(futures, todo))


def score_batch(inputs: list[ScoreInput], *, provider: Provider | None = None, runtime: BrowserRuntime | None = None,
                cfg: EnvConfig | None = None, reward_kind: str | None = None,
                attribution: AttributionConfig | None = None, progress: Progress | None = None) -> list[ScoreResult]:
    """Score many responses, each app judged as soon as its own browser check ends (a judge call waits for its
    app, never for the whole batch); judge calls in flight at most ``cfg.judge.concurrency`` per batch.
    ``progress`` counts each app as it is scored (judged, or decided without a judge) and the checks run."""
    tick = progress.update if progress is not None else (lambda n=1, **counts: None)
    cfg = cfg or EnvConfig()
    kind = reward_kind or cfg.reward_kind
    apps = []
    for inp in inputs:
        ex = extract_html(inp.response)
        apps.append(_App(inp, ex, check_source(ex.html, cfg.static) if ex else None))
    todo = [j for j, a in enumerate(apps) if a.ex is not None]
    tick(len(inputs) - len(todo))  # no application in the response: decided already
    checked = _browse(apps, todo, cfg, runtime)
    calls: dict[Future, int] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(cfg.judge.concurrency, len(todo)))) as pool:
        for j in _with_evidence(apps, todo, checked):
            call = _submit_judge(pool, provider, _judge_request(apps[j], provider, cfg), tick, apps[j].rt)
            if call is not None:
                calls[call] = j
        for fut, j in calls.items():
            res = fut.result()
            if res.output is not None:
                apps[j].take(res.output, given=False, res=res)
            else:
                apps[j].judge = JudgeRecord.of(res, False)
    return [combine(a.inp, a.ex, a.evidence, a.diag, a.dropped, a.judge, cfg, kind, attribution) for a in apps]


def score_response(task: Task, response: str, *, diagnosis: Diagnosis | dict[str, Any] | None = None,
                   provider: Provider | None = None, runtime: BrowserRuntime | None = None,
                   cfg: EnvConfig | None = None, reward_kind: str | None = None, key: str = "response",
                   attribution: AttributionConfig | None = None) -> ScoreResult:
    """Score one response (``rubricrl score``); ``attribution``: the section the findings' spans come from."""
    return score_batch([ScoreInput(key, task, response, diagnosis)], provider=provider, runtime=runtime, cfg=cfg,
                       reward_kind=reward_kind, attribution=attribution)[0]
