"""The interaction probe's pure decisions (issue 12): which observations fail the runtime gate, which decide
rubric items (heuristic), quotes that anchor one position, offsets moved into the response, observed facts."""
from __future__ import annotations

from dataclasses import replace

import pytest

from schemas.config.env import ProbeConfig, RuntimeConfig
from schemas.llm.diagnosis import Diagnosis
from schemas.rubric import JudgeItem, Task
from tasks.env.judge import build_judge_request, observed_facts
from tasks.env.judge_diagnosis import unique_quote, with_observed_findings
from tasks.env.evidence import Evidence, RuntimeEvidence, shift_offsets
from tasks.env.probe import interaction_failures, liveness
from tasks.env.probe_records import ProbeRecord, Sample
from tasks.env.records import CheckResult, PageError
from tasks.env.rubric_evidence import evidence_decision

ERR = {"action": 0, "kind": "error", "name": "TypeError", "message": "x is null", "offset": 40, "caused": True}
ACT = {"i": 0, "kind": "click", "target_desc": "button#go", "tag": "button", "label": "Go", "handler_offset": 30,
       "submit": None}


def inter(**kw):
    base = {"status": "ok", "actions": [dict(ACT)], "errors": [], "dead_controls": [], "hang": None,
            "liveness": {"rafs": 0, "visual_change": False, "animated": False, "gap_s": 0.3}}
    return ProbeRecord.from_dict({**base, **kw})


def test_only_caused_errors_hangs_and_reloads_fail():
    assert interaction_failures(inter()) == []
    assert interaction_failures(inter(errors=[{**ERR, "caused": False}])) == []  # the app's own idle error
    (f,) = interaction_failures(inter(errors=[ERR, {**ERR, "message": "x is null", "action": 0}]))  # one per signature
    assert f.kind == "error" and f.label == "Go" and f.offset == 40
    hang = {"action": 0, "action_kind": "click", "target": "button#go", "label": "Go", "offset": 30}
    assert [x.kind for x in interaction_failures(inter(hang=hang))] == ["hang"]
    sub = lambda a: inter(actions=[{**ACT, "submit": {"form": "form#f", "action_attr": a, "offset": 5}}])  # noqa: E731
    assert interaction_failures(sub(None))[0].kind == "reload"
    assert interaction_failures(sub("#")) and interaction_failures(sub("?q=1"))
    assert interaction_failures(sub("https://forms.example.org/send")) == []  # a form posting elsewhere is normal


def test_runtime_gate_follows_the_failures_and_config():
    from tasks.env.evidence import RuntimeEvidence

    ev = RuntimeEvidence(status="ok", blank_body=False, interaction=inter(errors=[ERR]))
    assert ev.runtime_valid(RuntimeConfig()) is False
    assert ev.runtime_valid(RuntimeConfig(probe=ProbeConfig(errors_fail=False))) is True
    dead = RuntimeEvidence(status="ok", blank_body=False, interaction=inter(dead_controls=[{"label": "Go"}]))
    assert dead.runtime_valid(RuntimeConfig()) is True  # dead controls are rubric evidence, never a runtime failure


@pytest.mark.parametrize("req, scope, ev, expect", [
    ("The ball moves continuously", "initial_state", inter(), "major"),
    ("The ball moves continuously", "initial_state", inter(liveness={"rafs": 12, "animated": True, "visual_change": True}), "met"),
    ("Pressing an arrow key moves the player", "dynamic", inter(), None),  # motion in answer to input: not idle motion
    ("Clicking Go starts the game", "dynamic", inter(dead_controls=[{"label": "Go", "has_handler": False}]), "major"),
    ("The Go button is shown", "initial_state", inter(dead_controls=[{"label": "Go"}]), None),  # display, not behaviour
    ("Clicking Going starts", "dynamic", inter(dead_controls=[{"label": "Go"}]), None),  # whole words only
    ("Clicking Go starts the game", "dynamic", inter(errors=[ERR]), "major"),
    ("The ball moves continuously", "initial_state", inter(status="hung"), None),  # no decision from a hung probe
])
def test_evidence_decides_rubric_items(req, scope, ev, expect):
    got = evidence_decision(JudgeItem(id="X", requirement=req, scope=scope, level="correct_rule"), ev)
    assert (got[0] if got else None) == expect
    if got and got[0] != "met":
        assert "heuristic" in got[2]


def test_unique_quote_widens_until_it_occurs_once():
    html = "function a() {\n  x = 1;\n  y();\n}\nfunction b() {\n  x = 1;\n  z();\n}\n"
    (q,) = unique_quote(html, html.index("x = 1", 20))
    assert html.count(q) == 1 and q.endswith("x = 1;") and "function b" in q
    assert unique_quote(html, html.index("z()")) == ["z();"]
    assert unique_quote(html, None) == [] and unique_quote(html, 10_000) == []


def test_observed_findings_are_code_simulation_major_with_the_quote():
    empty = {k: {"name": k} for k in ("static_check", "code_simulation", "rubric_alignment")}
    diag = Diagnosis.model_validate(empty)
    html = "<script>\nbtn.onclick = () => {\n  null.go();\n};\n</script>"
    out = with_observed_findings(diag, html, interaction_failures(inter(errors=[{**ERR, "offset": html.index("null")}])))
    (f,) = out.code_simulation.major
    assert f.code_quotes == ["null.go();"] and f.description.startswith("[browser] click on 'Go' throws")
    assert with_observed_findings(diag, html, []) is diag


def test_offsets_move_into_the_response_and_liveness_counts_motion():
    d = {"failures": [{"offset": 3, "label": "x"}], "actions": [{"handler_offset": None}, {"handler_offset": 2}]}
    assert shift_offsets(d, 10) == {"failures": [{"offset": 13, "label": "x"}],
                                    "actions": [{"handler_offset": None}, {"handler_offset": 12}]}
    a = Sample(rafs=5, draws=0, mutations=2, canvas=7, animations=0)
    assert liveness(a, a, 0.3).animated is False and liveness(a, a, 0.3).gap_s == 0.3
    assert liveness(a, replace(a, rafs=9), 0.3).animated is True
    assert liveness(a, replace(a, animations=1), 0.3).visual_change is True
    assert liveness(replace(a, t=1000.0), replace(a, t=1250.0), 0.3).gap_s == 0.25  # the page's clock, when it says


def test_judge_prompt_gets_the_observed_facts():
    html = "<html>\n<body>\n<button>Go</button>\n<script>\nnull.go();\n</script></body></html>"
    ev = Evidence(runtime=RuntimeEvidence(status="ok", interaction=inter(errors=[{**ERR, "offset": html.index("null")}],
                                                                       dead_controls=[{"label": "Stop"}])))
    facts = observed_facts(html, ev)
    assert "click on 'Go' throws TypeError: x is null (line 5)" in facts
    assert "'Stop'" in facts and "0 animation frames" in facts
    task = Task.model_validate({"query_id": "q", "query": "x", "rubric": {"initial_state": [
        {"id": "I1", "requirement": "r", "level": "core_module"}], "dynamic": []}})
    from tasks.llm.prompts import load_prompt

    req = build_judge_request(task, html, key="k", evidence=ev)
    _, user = load_prompt(req.prompt).render(req.variables)
    assert facts in user and "Observed in headless Chromium" in user


def test_the_change_codes_are_one_table_that_the_page_script_measures():
    """probe.js compares exactly the codes of tasks/env/probe.py CHANGES (substituted into the script), and its
    state() measures each; the codes that count as the app answering are the app-only rows."""
    import re

    from tasks.env.probe import ANSWERS, CHANGES, PROBE_JS

    assert "PROBE_CHANGES" not in PROBE_JS and 'for (const k of ["m", "c", "s", "d", "dl", "v"])' in PROBE_JS
    state = re.search(r"const state = \(\) => \(\{(.*?)\}\);", PROBE_JS, re.S).group(1)
    measured = set(re.findall(r"(\w+):", state))
    assert set(CHANGES) <= measured, set(CHANGES) - measured
    assert ANSWERS == ("m", "c", "d", "dl")  # scroll and form values move under the probe's own fill and scroll


# a wait on the machine's clock: a sleep, or a wait bounded by wall time (asyncio's wait, wait_for, timeout)
WAITS = {("asyncio", "sleep"), ("time", "sleep"), ("asyncio", "wait"), ("asyncio", "wait_for"), ("asyncio", "timeout"),
         ("asyncio", "timeout_at")}
# the page's clocks: page time (it lets page time pass, and falls back to wall time, saying so), the main
# thread's CPU time (a read left unanswered is told on it) and the hard limit held on both
CLOCK_OWNERS = ("pagetime.py", "mainthread.py", "hold.py")
NOT_A_PAGE = {"mirror_serve.py": "the CDN mirror's server process: it waits for its browser to exit, never on a page"}


def test_no_wall_clock_wait_in_the_environment_outside_the_clock():
    """Every wait of the load, the probe and the checks goes through page time (tasks/env/pagetime.py): a sleep,
    a wait bounded by wall time (asyncio.wait, wait_for, timeout) or a Playwright wait_for_timeout anywhere else
    in tasks/env would leave the controlled clock paused while the machine's time passes (the probe's loop_after
    did, and judged running animations stopped), or bound a page's answer by another rule than its clock's."""
    import ast
    from pathlib import Path

    import tasks.env

    found = []
    for path in sorted(Path(tasks.env.__file__).parent.glob("*.py")):
        if path.name in CLOCK_OWNERS or path.name in NOT_A_PAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
                if (owner, node.func.attr) in WAITS or node.func.attr == "wait_for_timeout":
                    found.append(f"{path.name}:{node.lineno}")
    assert found == [], f"waits on the machine's clock outside {CLOCK_OWNERS}: {found}"


LIBRARY_OBJECTS = {"context", "page", "browser", "frame", "route", "request", "req"}  # Playwright's, by our names


def test_the_environment_keeps_its_state_off_playwrights_objects():
    """What one app's session knows (the probe has started, the checks run) lives on the session, never as an
    attribute set on Playwright's context or page (the checks' flag once did: a library release that uses the name,
    or a context reused elsewhere, would silently change what is recorded as the app leaving its page)."""
    import ast
    from pathlib import Path

    import tasks.env

    found = []
    for path in sorted(Path(tasks.env.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            hit = any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in LIBRARY_OBJECTS
                      for t in targets)
            hit = hit or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                          and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in LIBRARY_OBJECTS)
            if hit:
                found.append(f"{path.name}:{node.lineno}")
    assert found == [], f"attributes set on Playwright's objects: {found}"


def test_the_throttled_runtime_overrides_what_the_runtime_calls():
    """``ThrottledRuntime`` (the load-proof tests and ``bench_checks --load-noise``) starves pages by wrapping the
    browser the session gets: were the method it overrides renamed in ``BrowserRuntime``, every throttled run would
    silently run at full speed and the load tests would prove nothing."""
    from tasks.env.runtime import BrowserRuntime
    from tasks.env.throttle import ThrottledRuntime

    overridden = [n for n, v in vars(ThrottledRuntime).items() if callable(v) and not n.startswith("__")]
    assert overridden and all(n in vars(BrowserRuntime) for n in overridden), overridden


def test_the_evidence_keeps_html_offsets_and_moves_every_one_into_the_response_once():
    """Syntax errors, page errors, check errors and the probe's failures and handlers are recorded with offsets
    into the HTML; ``rubricrl score`` prints them into the response, each moved by the same h, once."""
    from tasks.env.extract import extract_html
    from tasks.env.static import check_source

    response = "Here is the app:\n```html\n<script>let = ;</script><p>x</p>\n```"
    ex = extract_html(response)
    st = check_source(ex.html)
    err = PageError("TypeError", "m", offset=8)
    rt = RuntimeEvidence(status="page_error", page_errors=[err],
                         check_results=[CheckResult("I1", "failed", errors=(err,))],
                         interaction=ProbeRecord.from_dict({
                             "status": "ok", "errors": [{**err.to_dict(), "kind": "error", "action": 0, "caused": True}],
                             "actions": [{"i": 0, "kind": "click", "handler_offset": 8}]}))
    out = Evidence.read(st, rt, RuntimeConfig()).to_json(ex.offset, [])
    h = ex.offset
    assert response[out["syntax_errors"][0]["start"]:out["syntax_errors"][0]["end"]] == \
        ex.html[st.errors[0].start:st.errors[0].end]
    assert out["page_errors"][0]["offset"] == out["checks"][0]["errors"][0]["offset"] == 8 + h
    assert out["interaction"]["record"]["actions"][0]["handler_offset"] == 8 + h
    assert rt.page_errors[0].offset == 8  # the evidence itself keeps HTML offsets


class _SlowPage:
    """A page whose clock read answers after ``answer_s`` (None: never, an endless loop)."""

    def __init__(self, answer_s: float | None) -> None:
        self.answer_s = answer_s

    async def evaluate(self, _js: str):
        import asyncio

        if self.answer_s is None:
            await asyncio.Event().wait()
        await asyncio.sleep(self.answer_s)
        return 1.0


@pytest.mark.parametrize("work_s, answer_s, window_s, deadline_in, want", [
    (0.5, 0.05, 0.3, None, "done"),  # past its first wait, but the page answers: starved, not hung
    (0.5, None, 0.3, None, "hung"),  # the page answers nothing: hung
    (0.5, 0.15, 0.3, None, "done"),  # each read slower than the first wait, within the answer window
    (5.0, None, 3.0, 0.6, "hung"),  # the hard limit comes before the window: the hang is told first (its action kept)
])
def test_a_probe_wait_goes_on_while_the_page_answers_and_a_hang_is_told_before_the_hard_limit(
        work_s, answer_s, window_s, deadline_in, want):
    import asyncio

    from tasks.env.pagetime import answered
    from tasks.env.probe import ProbeSession

    async def go() -> tuple[str, float]:
        loop = asyncio.get_running_loop()
        session = ProbeSession(answer_s=window_s)
        if deadline_in is not None:
            end = loop.time() + deadline_in
            session.deadline = lambda: end
        t0 = loop.time()
        try:
            await answered(_SlowPage(answer_s), asyncio.sleep(work_s, "done"), 0.1, session.answer_s, session.deadline)
            return "done", loop.time() - t0
        except asyncio.TimeoutError:
            return "hung", loop.time() - t0

    got, took = asyncio.run(go())
    assert got == want, (got, took)
    if deadline_in is not None:
        assert took < deadline_in, took


def test_a_hang_outside_any_action_blocks_and_says_where():
    from tasks.env.judge_diagnosis import _observed_description
    from tasks.env.severity import classify_failures

    hang = {"action": None, "action_kind": "timer", "target": "the page, outside any action", "label": None,
            "offset": None}
    (f,) = classify_failures(inter(status="hung", hang=hang), "evidence")
    assert f.blocking and f.why == "the page stopped responding"
    assert _observed_description(f).startswith("timer on 'the page, outside any action' makes the page stop")


def test_the_probe_record_reads_back_its_own_json():
    """``rubricrl score`` writes the record once, at output; read back (``from_dict``) it writes the same JSON."""
    import json
    from pathlib import Path

    golden = json.loads((Path(__file__).parent / "fixtures" / "score_golden" / "score.json").read_text())
    records = [v["evidence"]["interaction"]["record"] for v in golden.values() if v["evidence"]["interaction"]]
    assert records and any(r["liveness"] for r in records) and any(r["dead_controls"] for r in records)
    for rec in records:  # stored without its duration (the machine's)
        assert ProbeRecord.from_dict(rec).to_dict() == {**rec, "duration_s": 0.0}
    idle = {"action": -3, "sync": False, "kind": "error", "name": "Error", "message": "m", "stack": "", "line": None,
            "column": None, "offset": None}  # an idle error is never asked whether an action caused it
    assert ProbeRecord.from_dict({"idle_errors": [idle]}).to_dict()["idle_errors"] == [idle]


def test_a_wait_on_the_browser_ends_when_it_disconnects_and_otherwise_is_the_awaited_result():
    """A page opening as the browser is killed is never answered by Playwright: ``before_gone`` ends the wait at the
    disconnect (the crash test in test_env_browser waited out its 30 s hard limit without it), and gives the awaited
    result, or its error, when that comes first."""
    import asyncio

    from tasks.env.pagetime import BrowserGone, before_gone

    async def never() -> None:
        await asyncio.Event().wait()

    async def fails() -> None:
        raise ValueError("no context")

    async def main() -> tuple[float, object]:
        loop = asyncio.get_running_loop()
        gone, t0 = loop.create_future(), loop.time()
        loop.call_later(0.05, gone.set_result, None)
        with pytest.raises(BrowserGone):
            await before_gone(never(), gone)
        took = loop.time() - t0
        with pytest.raises(ValueError, match="no context"):
            await before_gone(fails(), loop.create_future())
        return took, await before_gone(asyncio.sleep(0, result="page"), loop.create_future())

    took, got = asyncio.run(main())
    assert took < 5 and got == "page"
