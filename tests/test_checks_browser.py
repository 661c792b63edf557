"""Executable rubric checks in real headless Chromium: the quiz of the attribution tests, hand labels,
error offsets, the dry run on an empty page. One browser for the module; apps of a test run in parallel."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.checks import parse_check
from schemas.config.checks import ChecksConfig
from schemas.config.env import RuntimeConfig
from tasks.env.checks import CheckPlan, label_agreement, run_item_checks
from tasks.env.records import CheckResult
from tasks.env.runtime import BrowserRuntime

FIX = Path(__file__).parent / "fixtures" / "checks"
CFG = RuntimeConfig(concurrency=6)
CHECKS = ChecksConfig()
pytestmark = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
QUIZ = parse_check((FIX / "quiz_accuracy_check.json").read_text())
LABELLED = json.loads((FIX / "labelled.json").read_text())["items"]


@pytest.fixture(scope="module")
def runtime():
    with BrowserRuntime(CFG) as rt:
        yield rt


def run_apps(runtime, apps: dict[str, list]) -> dict[str, list[CheckResult]]:
    names = sorted(apps)
    evs = runtime.check_many([(FIX / "apps" / n).read_text() if n.endswith(".html") and (FIX / "apps" / n).exists()
                              else (FIX / n).read_text() for n in names],
                             checks=[CheckPlan(apps[n], CHECKS) for n in names])
    return {n: ev.check_results for n, ev in zip(names, evs)}


def test_quiz_accuracy_check_fails_on_the_buggy_app_with_the_observed_numbers_and_passes_on_the_fixed_one(runtime):
    res = run_apps(runtime, {"quiz_buggy.html": [("D12", QUIZ)], "quiz_fixed.html": [("D12", QUIZ)]})
    bug, = res["quiz_buggy.html"]
    # four answers, two of them right (score 20): the buggy app counts only the right ones, so 100% instead of 50%
    assert (bug.status, bug.step_kind, bug.observed, bug.expected) == ("failed", "number_relation", "100",
                                                                                  "eq 50")
    assert bug.step == len(QUIZ.steps) - 1 and not bug.errors
    assert res["quiz_fixed.html"][0].status == "passed"


def test_checks_agree_with_hand_labels_without_false_fails(runtime):
    apps: dict[str, list] = {}
    labels: dict[tuple[str, str], str] = {}
    for n, it in enumerate(LABELLED):
        for app, label in it["apps"].items():
            apps.setdefault(app, []).append((f"X{n}", parse_check(it["check"])))
            labels[(app, f"X{n}")] = label
    assert len(labels) >= 20
    res = run_apps(runtime, apps)
    pairs = [(labels[(app, r.item_id)], r.status) for app, rs in res.items() for r in rs]
    report = label_agreement(pairs)
    print("checks vs hand labels:", report)
    assert report["false_fails"] == 0 and report["false_passes"] == 0
    assert report["agreement"] == 1.0 and report["inconclusive_rate"] <= 0.1
    undo = next(r for r in res["counter.html"] if labels[("counter.html", r.item_id)] == "not_met")
    assert undo.status == "inconclusive" and "found nothing" in undo.reason  # looked, found nothing: no verdict


def test_an_uncaught_error_fails_no_error_with_its_html_offset_and_the_load_verdict_stays(runtime):
    check = parse_check({"steps": [{"do": "click", "target": {"role": "button", "name": "details"}},
                                   {"expect": "no_error"}]})
    html = (FIX / "apps" / "details_broken.html").read_text()
    ev = runtime.check_many([html], checks=[CheckPlan([("D1", check)], CHECKS)])[0]
    assert ev.status == "ok" and not ev.page_errors  # a check's error is the check's, not the load's
    r, = ev.check_results
    assert r.status == "failed" and r.step == 1
    err = r.errors[0]
    assert err.name == "TypeError" and html[err.offset - 9:].startswith("p.hidden.toggle()")  # V8 points at the call


def test_every_labelled_check_is_inconclusive_on_an_empty_page(runtime):
    hidden = parse_check({"steps": [{"expect": "hidden", "target": {"text": "specifications"}}]})
    checks = [(f"X{n}", parse_check(it["check"])) for n, it in enumerate(LABELLED)] + [("H", hidden)]
    fast = ChecksConfig(step_timeout_ms=200, max_checks=len(checks))
    # an empty page has no script that could change it after load: no settle wait before each of the 19 checks
    res = run_item_checks(runtime, "<!DOCTYPE html><html><body></body></html>", checks,
                          fast.model_copy(update={"settle_ms": 0}))
    assert {r.status for r in res} == {"inconclusive"}, [r for r in res if r.status != "inconclusive"]
    assert all(r.reason.startswith("locator found nothing") for r in res)  # each ran, and found nothing
    # its twin: on the app the panel exists and is hidden on load, so "hidden" holds there
    twin = run_item_checks(runtime, (FIX / "apps" / "details.html").read_text(), [("H", hidden)], fast)
    assert twin[0].status == "passed"


# A slider that redraws the drawing, wherever the app puts it: a second canvas, a canvas appended to the body
# outside the plan's areas, an SVG plot. Each twin's slider moves but nothing drawn changes.
_SLIDER = '<input type="range" id="s" min="1" max="9" value="3"><span id="v">3</span>'
_CANVASES = f"""<!DOCTYPE html><html><body>{_SLIDER}<div id="a"><canvas id="c1" width="120" height="80"></canvas></div>
<div id="b"></div><script>
const c2 = document.createElement('canvas'); c2.width = 120; c2.height = 80; document.WHERE.appendChild(c2);
for (const c of [document.getElementById('c1'), c2]) {{ const g = c.getContext('2d'); g.fillStyle = '#36c';
  g.fillRect(10, 10, 30, 30); }}
function draw(n) {{ const g = c2.getContext('2d'); g.clearRect(0, 0, 120, 80); g.fillStyle = '#c33';
  g.fillRect(5, 5, n * 10, 60); }}
draw(3);
document.getElementById('s').addEventListener('input', e => {{ document.getElementById('v').textContent = e.target.value;
  REDRAW }});
</script></body></html>"""
_PLOT = f"""<!DOCTYPE html><html><body>{_SLIDER}<svg id="plot" width="200" height="100" viewBox="0 0 200 100">
<path id="p" d="M0,90 L200,80" stroke="#c33" stroke-width="3" fill="none"/></svg><script>
document.getElementById('s').addEventListener('input', e => {{ document.getElementById('v').textContent = e.target.value;
  REDRAW }});
</script></body></html>"""
_REPLOT = "document.getElementById('p').setAttribute('d', `M0,90 L200,${90 - e.target.value * 9}`);"
DRAWING_CHECK = parse_check({"steps": [{"do": "remember", "target": {"drawing": True}, "name": "before"},
                                       {"do": "fill", "target": {"css": "#s"}, "value": "8"},
                                       {"expect": "canvas_changes", "target": {"drawing": True}, "since": "before"}]})


def test_a_drawing_check_sees_any_canvas_or_svg_change_and_fails_the_twin_whose_slider_redraws_nothing(runtime):
    apps = {"second canvas": _CANVASES.replace("WHERE", "getElementById('b')"),
            "canvas in the body": _CANVASES.replace("WHERE", "body"), "svg plot": _PLOT}
    redraw = {"second canvas": "draw(+e.target.value);", "canvas in the body": "draw(+e.target.value);",
              "svg plot": _REPLOT}
    names = sorted(apps)
    htmls = [apps[n].replace("REDRAW", redraw[n]) for n in names] + [apps[n].replace("REDRAW", "") for n in names]
    htmls.append(f"<!DOCTYPE html><html><body>{_SLIDER}</body></html>")  # nothing drawn at all
    evs = runtime.check_many(htmls, checks=[CheckPlan([("D", DRAWING_CHECK)], CHECKS)] * len(htmls))
    got = [ev.check_results[0] for ev in evs]
    k = len(names)
    assert [r.status for r in got[:k]] == ["passed"] * k, got[:k]  # the correct apps stay clean
    assert [r.status for r in got[k:2 * k]] == ["failed"] * k, got[k:2 * k]
    assert all(r.step_kind == "canvas_changes" and "some canvas or svg" in r.expected for r in got[k:2 * k])
    assert got[-1].status == "inconclusive" and "found nothing" in got[-1].reason


def test_checks_that_crash_are_inconclusive_with_their_reason_and_the_app_keeps_its_verdict(runtime, monkeypatch):
    """A crash of the checks themselves (here the check runner raises) is no verdict on the app: every checked
    item is inconclusive, saying the checks crashed and why, and the runtime gate stands as the browser saw it."""
    import tasks.env.runtime as runtime_mod
    from schemas.config.env import EnvConfig
    from schemas.rubric import Task
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm import get_provider

    async def crash(*_a, **_k):
        raise RuntimeError("the check lane died")

    monkeypatch.setattr(runtime_mod, "run_checks", crash)  # the session's checks step calls it
    check = {"steps": [{"expect": "text", "target": {"css": "body"}, "matches": "hello"}]}
    task = Task.model_validate({"query_id": "q", "query": "Say hello.", "rubric": {"initial_state": [
        {"id": "I1", "requirement": "The page says hello", "level": "core_module", "check": check}], "dynamic": []}})
    app = "```html\n<!DOCTYPE html><html><body><p>hello</p></body></html>\n```"
    (res,) = score_batch([ScoreInput("a", task, app)], provider=get_provider("offline"), runtime=runtime,
                         cfg=EnvConfig(runtime=CFG))
    assert res.runtime_valid is True
    (rec,) = res.check_results
    assert rec.status == "inconclusive" and rec.reason == "not run: the checks crashed: RuntimeError: the check lane died"


def test_a_shared_read_that_raises_is_inconclusive_with_its_reason_and_the_others_are_decided(runtime, monkeypatch):
    """Checks made only of reads share one document (``checks.shared_document``): a read there that raises
    anything but a verdict is that item's inconclusive result, saying why, never a swallowed error; the other
    reads and the check run whole in that document keep their verdicts."""
    from tasks.env import check_steps

    real = check_steps.StepRun.expect

    async def expect(self, s, limit):
        if self.at_once and getattr(s, "matches", None) == "broken read":
            raise RuntimeError("the reading lost its page")
        return await real(self, s, limit)

    monkeypatch.setattr(check_steps.StepRun, "expect", expect)
    read = lambda text: parse_check({"steps": [{"expect": "text", "target": {"css": "body"}, "matches": text}]})
    checks = [("I1", read("hello")), ("I2", read("broken read")), ("I3", read("goodbye")), ("I4", read("hello"))]
    ev = runtime.check_many(["<!DOCTYPE html><html><body><p>hello</p></body></html>"],
                            checks=[CheckPlan(checks, CHECKS)])[0]
    by = {r.item_id: r for r in ev.check_results}
    assert [by[i].status for i in ("I1", "I2", "I3", "I4")] == ["passed", "inconclusive", "failed", "passed"], by
    assert by["I2"].reason == "the shared reading failed: RuntimeError: the reading lost its page"
