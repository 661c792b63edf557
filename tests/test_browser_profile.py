"""The browser tests share one timing profile: the product's own limits (``RuntimeConfig``'s defaults), the
ones users' verdicts are made with, so a verdict shown load-proof here is load-proof there. A test may set a
timing only where the timing is what it is about, and ``UNDER_TEST`` says why (pure: reads the tests' source)."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TIMING = frozenset({"load_timeout_s", "settle_s", "hard_limit_s"})
UNDER_TEST = {  # "file::function" (or "file::<module>") -> why it sets a timing
    "test_env_browser.py::test_browser_crash_mid_batch_is_restarted_without_losing_apps":
        "busy-looping apps loaded while the browser is killed: the crash, not a limit, is under test",
    "test_env_interaction.py::test_busy_but_progressing_load_is_not_hung": "a load event later than load_timeout_s",
    "test_env_interaction.py::test_a_load_the_hard_limit_ends_is_a_load_timeout_whichever_clock_tells_it":
        "a load timeout past the hard limit, so that the hold, not goto, tells the endless load",
    "test_env_interaction.py::test_verdicts_do_not_depend_on_concurrency_with_heavy_webgl_apps":
        "loads past load_timeout_s beside other WebGL apps: the heartbeat and the re-check alone",
    "test_env_sandbox.py::<module>": "delayed escape attempts (timers up to a second after load) must run",
    "test_env_pipelined.py::test_a_loaded_app_is_judged_while_a_slow_one_still_loads": "a load of SLOW_S seconds",
    "test_evaluation.py::test_a_slow_screenshot_is_not_the_apps_time": "a screenshot slower than the hard limit",
    "test_load_errors.py::test_the_hard_limit_cutting_the_probe_short_after_an_error_at_load_is_a_time_verdict":
        "the hard limit cutting the probe short",
    "test_env_fingerprint.py::test_excluded_settings_leave_it_alone_and_each_names_its_reason":
        "a changed timing setting changes the environment's fingerprint (no browser)",
}


def timing_settings(path: Path) -> set[str]:
    """"file::function" of every place in a test file that sets a timing: a keyword of a call, or a key of a
    dict (``model_copy(update=...)``, a flow's ``{"runtime": {...}}``)."""
    out: set[str] = set()

    def visit(node: ast.AST, owner: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owner = node.name
        sets = (isinstance(node, ast.Call) and any(k.arg in TIMING for k in node.keywords)) or \
            (isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in TIMING for k in node.keys))
        if sets:
            out.add(f"{path.name}::{owner}")
        for child in ast.iter_child_nodes(node):
            visit(child, owner)

    visit(ast.parse(path.read_text()), "<module>")
    return out


def test_browser_tests_use_one_timing_profile():
    found = set().union(*(timing_settings(p) for p in sorted(TESTS.glob("test_*.py")) if p.name != Path(__file__).name))
    assert sorted(found - set(UNDER_TEST)) == [], "use RuntimeConfig()'s limits, or say in UNDER_TEST why not"
    assert sorted(set(UNDER_TEST) - found) == [], "UNDER_TEST names a place that no longer sets a timing"


def test_the_profile_rule_sees_each_way_of_setting_a_timing(tmp_path):
    src = tmp_path / "test_x.py"
    src.write_text("A = RuntimeConfig(concurrency=2)\nB = RuntimeConfig(settle_s=1)\n"
                   "def test_a():\n    c = A.model_copy(update={'hard_limit_s': 3})\n"
                   "def test_b():\n    env = {'runtime': {'workers': 1}}\n"
                   "def test_c():\n    env = {'runtime': {'load_timeout_s': 3}}\n")
    assert timing_settings(src) == {"test_x.py::<module>", "test_x.py::test_a", "test_x.py::test_c"}
