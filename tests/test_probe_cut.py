"""The probe says when the wall-time cap, not its page-time budget, stopped its actions (probe.js ``R.run``: ``cut``):
on a machine too busy to draw the app at page speed it uses fewer controls, so its "most controls failing" is
decided on another count, and the app is checked again alone in a batch (``RuntimeEvidence.load_bound``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from tasks.env.probe import PROBE_JS

CFG = RuntimeConfig()
pytestmark = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")
RUN = "([a, w]) => window.__rrProbe.run(a, 100000, 1, 0, w)"  # a page-time budget no test reaches


def test_the_run_says_cut_only_when_the_wall_time_cap_stopped_it():
    from playwright.sync_api import sync_playwright

    actions = [{"kind": "click", "target_index": 0}]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CFG.executable_path)
        page = browser.new_page()
        page.set_content("<button>Go</button>")
        page.add_script_tag(content=PROBE_JS)
        capped = page.evaluate(RUN, [actions, -1])  # past the cap before the first action
        whole = page.evaluate(RUN, [[], 60000])  # nothing left to run: never cut
        browser.close()
    assert capped["cut"] == "wall" and capped["log"] == []
    assert whole["cut"] is None
