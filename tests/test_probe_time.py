"""The interaction probe on the controlled clock (tasks/env/pagetime.py) in real headless Chromium: the settle
time and the liveness gap are page time (the same animation frames whatever the CPU's speed), the frame after
an action is a frame of the app's own loop (a button whose effect the next frame draws is not dead; its twin
that changes nothing is), and a page that busy-waits on the clock is probed on its own clock, saying why."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from tasks.env.throttle import ThrottledRuntime

FIX = Path(__file__).parent / "fixtures"
CFG = RuntimeConfig(concurrency=4)
pytestmark = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
APPS = ["env/interaction/anim_runs.html", "env/interaction/anim_stops.html", "checks/time/raf_button.html",
        "checks/time/raf_button_dead.html", "checks/time/busy.html"]


def probe(rate: float) -> dict[str, dict]:
    with ThrottledRuntime(CFG, rate=rate) as rt:
        evs = rt.check_many([(FIX / a).read_text() for a in APPS])
    return {Path(a).name: ev.interaction.to_dict() for a, ev in zip(APPS, evs)}


@pytest.fixture(scope="module")
def quiet() -> dict[str, dict]:
    return probe(1)


def test_the_liveness_gap_is_page_time_and_gives_the_same_frames_at_8x_throttling(quiet):
    runs, stops = quiet["anim_runs.html"]["liveness"], quiet["anim_stops.html"]["liveness"]
    assert runs["gap_s"] == CFG.probe.liveness_gap_s and quiet["anim_runs.html"]["clock"] == "controlled"
    assert runs["animated"] and runs["canvas_change"] and runs["rafs"] >= 15  # 300 ms of frames
    assert (stops["rafs"], stops["canvas_change"]) == (0, False)  # its one frame came before the first sample
    slow = probe(8)
    keep = ("rafs", "canvas_change", "gap_s", "animated")
    assert {n: {k: v["liveness"][k] for k in keep} for n, v in slow.items() if n.startswith("anim")} == \
        {n: {k: v["liveness"][k] for k in keep} for n, v in quiet.items() if n.startswith("anim")}


def test_the_frame_after_a_click_is_drawn_by_the_apps_own_loop(quiet):
    labels = lambda n: [c["label"] for c in quiet[n]["dead_controls"]]  # noqa: E731
    assert labels("raf_button.html") == [] and labels("raf_button_dead.html") == ["Switch"]


def test_a_page_that_busy_waits_on_the_clock_is_probed_on_its_own_clock(quiet):
    busy = quiet["busy.html"]
    assert busy["status"] == "ok" and busy["clock"] == "page" and "busy waiting" in busy["clock_reason"]
    roll, = [a for a in busy["actions"] if a["label"] == "Roll"]
    assert roll["changed"]  # the roll finished on the real clock and showed its result
