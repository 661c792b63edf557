"""Verdicts on real-app failure modes, each beside a correct twin that must stay clean (real headless Chromium, the
real CDN mirror, the offline judge): the exact library version an app asks for; a library the mirror lacks (no
reward, the URL named) against one refused on purpose (the app's problem); an error confined to one control's
handler against one that stops the app's main loop; a page that reloads itself forever; a popup flood."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.config.env import EnvConfig, ProbeConfig, RuntimeConfig
from schemas.rubric import Task
from tasks.env.score_tables import judgment_row, reward_row, tier_cause
from tasks.env.runtime import BrowserRuntime
from tasks.env.score import ScoreInput, score_batch
from tasks.llm import get_provider

CFG = RuntimeConfig(concurrency=4)
pytestmark = [pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                 reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh"),
              pytest.mark.skipif(not CFG.cdn_root().is_dir(), reason="npm ci --prefix vendor/cdn --ignore-scripts")]
TASK = Task.model_validate({"query_id": "q", "query": "A speed simulator with Start, Boost and Reset buttons.",
                            "rubric": {"initial_state": [{"id": "I1", "requirement": "The page shows a speed readout",
                                                          "level": "rendering_effect"}],
                                       "dynamic": [{"id": "D1", "requirement": "Clicking Start starts the motion",
                                                    "level": "core_module"},
                                                   {"id": "D2", "requirement": "Clicking Boost doubles the speed",
                                                    "level": "correct_rule"},
                                                   {"id": "D3", "requirement": "Clicking Reset sets the speed to zero",
                                                    "level": "correct_rule"}]}})


def page(head: str, body: str) -> str:
    return f"```html\n<!DOCTYPE html><html><head>{head}</head><body><p id='speed'>speed 1</p>{body}</body></html>\n```"


P5 = "<script src='https://cdnjs.cloudflare.com/ajax/libs/p5.js/{v}/p5.js'></script>"
USES_P5 = "<script>new p5(s => { s.setup = () => s.createCanvas(80, 60); s.draw = () => s.background(s.frameCount % 255); });" \
          "document.getElementById('speed').textContent = 'p5 ' + p5.prototype.VERSION;</script>"
BUTTONS = ("<button id='start'>Start</button><button id='boost'>Boost</button><button id='reset'>Reset</button>"
           "<script>let v = 1, state = {}; const out = document.getElementById('speed');"
           "start.onclick = () => { v = 1; out.textContent = 'speed ' + v; };"
           "reset.onclick = () => { v = 0; out.textContent = 'speed ' + v; };")
LOOP = "const loop = () => { out.style.opacity = 0.5 + 0.5 * Math.sin(performance.now() / 200) * (FACTOR); requestAnimationFrame(loop); }; loop();"
APPS = {
    # exact versions: the app checks it got what it asked for
    "p5_exact": page(P5.format(v="1.4.0"), USES_P5 + "<script>if (p5.prototype.VERSION !== '1.4.0') throw new Error('wrong p5 ' + p5.prototype.VERSION);</script>"),
    "p5_missing": page(P5.format(v="1.10.0"), USES_P5),  # a published p5 the mirror does not pin
    "gap_unused": page("<script src='https://cdn.jsdelivr.net/npm/three@0.158.1/build/three.min.js'></script>",
                       "<script>document.getElementById('speed').textContent = 'speed 2';</script>"),
    # a file the asked-for version does not have: the real CDN's 404, which the app sees (and survives) as a user would
    "cdn_404": page("", "<script>fetch('https://cdn.jsdelivr.net/npm/three@0.150.0/examples/js/controls/OrbitControls.js')"
                        ".then(r => { if (r.status !== 404) throw new Error('status ' + r.status); })"
                        ".catch(e => setTimeout(() => { throw e; }));</script>"),
    # refused on purpose, and the app depends on it: the app's problem
    "api_dependent": page("", "<script>const x = new XMLHttpRequest(); x.open('GET', 'https://api.example.com/speed', false);"
                              "x.send(); document.getElementById('speed').textContent = JSON.parse(x.responseText).v;</script>"),
    # one control's handler throws (the toFixed), against a click that kills the app's main loop
    "one_handler": page("", BUTTONS + "boost.onclick = () => { out.textContent = state.speed.toFixed(2); };"
                        + LOOP.replace("FACTOR", "1") + "</script>"),
    "main_loop": page("", BUTTONS + "boost.onclick = () => { state = null; };"
                      + LOOP.replace("FACTOR", "state.f0 || 1") + "</script>"),
    # the handler answers and a helper it schedules throws later, outside the handler: the loop keeps running
    "deferred_throw": page("", BUTTONS + "boost.onclick = () => { v *= 2; out.textContent = 'speed ' + v; "
                           "setTimeout(() => { state.helper.track('boost'); }, 0); };"
                           + LOOP.replace("FACTOR", "1") + "</script>"),
    # hostile pages and their twins
    "reload_loop": page("", "<script>setInterval(() => location.reload(), 10);</script>"),
    "reload_button": page("", "<button id='r'>Reset</button><script>r.onclick = () => location.reload();</script>"),
    # three reloads in one task: a newer attempt cancels the older before its request leaves the browser, so the route
    # sees one or two of them (as many as a loaded machine lets through); the page counts all three
    "reload_burst": page("", "<script>setTimeout(() => { location.reload(); location.reload(); location.reload(); }, 50);"
                             "</script>"),
    # each document asks for one reload at load: in a browser the new document asks again, forever
    "reload_each_load": page("", "<script>setTimeout(() => location.reload(), 50);</script>"),
    "reload_once": page("", "<script>if (!sessionStorage.r) { sessionStorage.r = 1; setTimeout(() => location.reload(), 50); }"
                            "</script>"),  # a guarded refresh: the new document stays
    "push_loop": page("", "<script>let i = 0; setInterval(() => { history.pushState({}, '', '?v=' + i); "
                          "location.hash = 'h' + i++; }, 10);</script>"),  # the document stays: no reload
    "popup_flood": page("", "<script>for (let i = 0; i < 2000; i++) window.open('https://ads.example.org/' + i);</script>"),
    "popup_click": page("", "<button id='h'>Help</button><script>h.onclick = () => { const w = window.open("
                            "'https://docs.example.org/help'); w.focus(); };</script>"),
}
CHECKED = Task.model_validate({**TASK.model_dump(), "rubric": {**TASK.rubric.model_dump(), "initial_state": [
    {"id": "I1", "requirement": "The page shows a speed readout", "level": "rendering_effect",
     "check": {"steps": [{"expect": "text", "target": {"role": "status"}, "matches": "speed 1"}]}}]}})
EMPTY = {k: {"critical": [], "major": [], "minor": []} for k in ("static_check", "code_simulation", "rubric_alignment")}


@pytest.fixture(scope="module")
def scored():
    cfg = EnvConfig(runtime=CFG)
    with BrowserRuntime(CFG) as rt:
        res = score_batch([ScoreInput(k, TASK, v) for k, v in APPS.items()]
                          + [ScoreInput("one_handler_given", TASK, APPS["one_handler"], diagnosis=EMPTY),
                             ScoreInput("p5_missing_checked", CHECKED, APPS["p5_missing"])],
                          provider=get_provider("offline"), runtime=rt, cfg=cfg)
    return cfg, {r.key: r for r in res}


def test_the_exact_version_asked_for_is_served(scored):
    cfg, by = scored
    ok = by["p5_exact"]
    assert ok.runtime_valid is True and ok.reward is not None and ok.reward > cfg.reward.rubric_floor, ok.evidence_json()["page_errors"]
    assert any("p5-1.4.0/lib/p5.js" in s["file"] for s in ok.evidence_json()["cdn_served"])


def test_a_library_the_mirror_lacks_is_a_missing_reward_with_the_url(scored):
    _, by = scored
    gap = by["p5_missing"]
    url = "https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.10.0/p5.js"
    assert gap.reward is None and gap.runtime_valid is None and gap.missing_reason == "environment_gap"
    assert gap.gates["browser"] is None and gap.evidence.runtime_status == "page_error"  # it threw: no verdict
    assert [g["url"] for g in gap.evidence_json()["environment_gaps"]] == [url] and gap.evidence_json()["environment_gaps"][0]["spec"] == "p5@1.10.0"
    assert gap.to_json()["missing_reason"] == "environment_gap"
    assert gap.judge.provider is None and "environment gap" in gap.judge.error  # no judge call paid for it
    row = judgment_row(gap)
    assert row["environment_gaps"] == [url] and json.loads(row["evidence_json"])["environment_gaps"][0]["url"] == url
    assert reward_row(gap, "h")["tier"] == "missing" and reward_row(gap, "h")["tier_cause"] == "environment_gap"
    # the executable checks' pages load the app again after the verdict: their requests are recorded as theirs
    checked = by["p5_missing_checked"]
    assert [b["phase"] for b in checked.evidence_json()["blocked_requests"]].count("check") >= 1
    assert [g["url"] for g in checked.evidence_json()["environment_gaps"]] == [url] and checked.reward is None
    # the twins: an app that works despite an unserved request keeps its verdict; a refused API it depends on is its own
    unused = by["gap_unused"]
    assert unused.runtime_valid is True and unused.reward is not None and unused.evidence_json()["environment_gaps"] == []
    api = by["api_dependent"]
    assert api.runtime_valid is False and tier_cause(api) == "app_error" and api.evidence_json()["environment_gaps"] == []
    assert any(b["outcome"] == "refused" for b in api.evidence_json()["blocked_requests"])
    gone = by["cdn_404"]  # the page got the 404 (a blocked request would reject the fetch): no gap, no failure
    assert gone.runtime_valid is True and gone.evidence_json()["environment_gaps"] == [], gone.evidence_json()["page_errors"]
    assert [b["outcome"] for b in gone.evidence_json()["blocked_requests"]] == ["not_found"]


def _sim(r, sev):
    return [f for f in r.findings if f.layer == "code_simulation" and f.severity == sev
            and f.description.startswith("[browser]")]


def test_an_error_confined_to_one_handler_is_a_defect_of_its_item_not_a_runtime_failure(scored):
    cfg, by = scored
    one = by["one_handler"]
    assert cfg.runtime.probe.error_rule == "evidence"
    # runtime-valid: a rubric-tier reward (here the floor: the offline judge's evidence decided only D2, unmet)
    assert one.runtime_valid is True and one.reward is not None and one.reward >= cfg.reward.rubric_floor
    assert one.reward > cfg.reward.runtime_invalid and "D2" not in one.undecided
    (minor,) = _sim(one, "minor")
    assert "toFixed" in minor.description and "confined" in minor.explanation and _sim(one, "major") == []
    boost = [f for f in one.findings if f.layer == "rubric_alignment" and f.item_id == "D2"]
    assert [f.severity for f in boost] == ["major"]
    # whoever judged (here a given diagnosis with no findings): the item the failing control serves is unmet,
    # anchored at the throwing line; the other items stay met
    given = by["one_handler_given"]
    (item,) = [f for f in given.findings if f.layer == "rubric_alignment"]
    assert item.item_id == "D2" and item.severity == "major" and item.description.startswith("[browser]")
    assert "state.speed.toFixed(2)" in item.code_quotes[0]
    assert given.runtime_valid is True and 0.3 < given.reward < 1.0
    # the paper's rule, by the setting: the same evidence fails the gate
    gate = RuntimeConfig(**{**CFG.model_dump(), "probe": ProbeConfig(error_rule="gate")})
    rt_ev = one.evidence.runtime  # the browser's own record, kept typed to the output
    assert rt_ev.runtime_valid(gate) is False and rt_ev.runtime_valid(CFG) is True


def test_an_error_that_stops_the_main_loop_blocks(scored):
    cfg, by = scored
    dead = by["main_loop"]
    assert dead.runtime_valid is False and dead.reward == cfg.reward.runtime_invalid and tier_cause(dead) == "app_error"
    (major,) = _sim(dead, "major")
    assert "main loop stopped" in major.explanation


def test_an_error_thrown_after_the_handler_does_not_stop_a_loop_that_keeps_running(scored):
    """The twin of the main-loop verdict for an error outside the handler (a deferred helper): the motion after the
    probe is sampled across page time, so the app's frames run and it is not judged stopped."""
    cfg, by = scored
    ok = by["deferred_throw"]
    after = ok.evidence.runtime.interaction.loop_after
    assert after.rafs > 0 and after.gap_s == pytest.approx(cfg.runtime.probe.liveness_gap_s), after
    assert ok.runtime_valid is True and ok.reward is not None and ok.reward >= cfg.reward.rubric_floor
    (minor,) = _sim(ok, "minor")
    assert "reading 'track'" in minor.description and "after this control's effect showed" in minor.explanation
    assert _sim(ok, "major") == []


def test_a_page_that_reloads_itself_forever_fails_and_one_reload_on_a_button_does_not(scored):
    cfg, by = scored
    loop = by["reload_loop"]
    assert loop.evidence.runtime_status == "reload_loop" and loop.runtime_valid is False
    assert loop.reward == cfg.reward.runtime_invalid
    twin = by["reload_button"]
    assert twin.runtime_valid is True and twin.evidence.runtime_status == "ok"
    navs = [b for b in twin.evidence_json()["blocked_requests"] if b["kind"] == "navigation"]
    assert navs and all(b["phase"] == "probe" for b in navs)  # the reload the probe's click asked for


def test_reloads_are_counted_by_the_page_not_by_the_requests_that_reach_the_route(scored):
    """The reload-loop verdict counts the page's own attempts: three in one task are three, however few of their
    requests reach the route before the verdict; one reload, and a page that only rewrites its URL in place, stay
    clean."""
    _, by = scored
    burst = by["reload_burst"]
    assert burst.evidence.runtime_status == "reload_loop" and burst.runtime_valid is False
    for twin in ("reload_once", "push_loop"):
        assert by[twin].evidence.runtime_status == "ok" and by[twin].runtime_valid is True, twin


def test_a_page_that_reloads_itself_after_every_load_fails_and_one_guarded_reload_does_not(scored):
    """A reload the page asks for at load, with no user action, is let through once, as a browser loads it: a new
    document that asks again reloads forever (reload_loop); one that does not is the app, judged as it is."""
    _, by = scored
    chain = by["reload_each_load"]
    assert chain.evidence.runtime_status == "reload_loop" and chain.runtime_valid is False
    outcomes = [b["outcome"] for b in chain.evidence_json()["blocked_requests"] if b["kind"] == "navigation"]
    assert outcomes[0] == "let_through" and len(outcomes) >= 2, outcomes
    once = by["reload_once"]
    assert once.evidence.runtime_status == "ok" and once.runtime_valid is True
    assert [b["outcome"] for b in once.evidence_json()["blocked_requests"] if b["kind"] == "navigation"] == ["let_through"]


def test_popups_without_a_gesture_are_refused_and_the_page_is_judged(scored):
    _, by = scored
    flood = by["popup_flood"]
    assert flood.evidence.runtime_status == "ok" and flood.runtime_valid is True
    assert flood.evidence_json()["refused_popups"] == 2000
    assert any("popup" in f.description for f in flood.findings if f.severity == "minor")
    twin = by["popup_click"]  # opened by a click: allowed (its w.focus() would throw on a refused popup)
    assert twin.runtime_valid is True and twin.evidence_json()["refused_popups"] == 0
    assert twin.evidence_json()["interaction"]["navigations"] >= 1 and _sim(twin, "minor") == []
