"""Tests sorted by kind (tests/kinds.py): the table check names a test file without kinds (every pytest run
makes it, at configure time); ``--fast`` keeps the unit, property and wire tests; a browser, vLLM or
DeepSpeed test that skips while CI=true fails the run (a missing install step), while the same skip
outside CI, or a unit test's skip, stands."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.kinds import ci_skip_failure, table_problems

REPO = Path(__file__).resolve().parent.parent
SAMPLE = '''
import pytest

@pytest.mark.browser
def test_needs_chromium():
    pytest.skip("no Chromium here: scripts/setup-system.sh")

@pytest.mark.unit
def test_not_applicable_here():
    pytest.skip("nothing to check on this platform")

@pytest.mark.unit
def test_plain():
    pass
'''


def test_the_table_check_names_a_missing_and_a_stale_file(tmp_path):
    (tmp_path / "test_new.py").write_text("")
    (tmp_path / "test_known.py").write_text("")
    problems = table_problems(tmp_path, {"test_known.py": ("unit",), "test_gone.py": ("unit",)})
    assert problems == ["test_new.py has no kinds: add it to KINDS in tests/kinds.py",
                        "KINDS names test_gone.py, which does not exist: remove its row"]
    assert table_problems(tmp_path, {"test_known.py": ("unit",), "test_new.py": ("flows", "browser")}) == []
    assert table_problems(tmp_path, {"test_known.py": ("unit",), "test_new.py": ("slowish",)}) == [
        "test_new.py: 'slowish' is not a kind (one of unit, property, wire, flows, browser, training, deepspeed, "
        "vllm, gpu)"]


def test_a_skip_fails_in_ci_only_for_tests_that_need_an_install():
    ci = {"CI": "true"}
    assert "missing" in ci_skip_failure({"browser", "flows"}, "no Chromium", ci)
    assert "vllm" in ci_skip_failure({"vllm"}, "no vllm", {"CI": "1"})
    assert ci_skip_failure({"browser"}, "no Chromium", {}) is None  # outside CI the skip stands
    assert ci_skip_failure({"browser"}, "no Chromium", {"CI": "false"}) is None
    assert ci_skip_failure({"unit", "wire"}, "not applicable", ci) is None


def _run(tmp_path: Path, *args: str, ci: bool) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.kinds", "-p", "no:cacheprovider",
                           "-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path), *args,
                           str(tmp_path / "test_sample.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_hooks_in_a_real_pytest_run(tmp_path):
    in_ci = _run(tmp_path, ci=True)
    assert in_ci.returncode == 1, in_ci.stdout
    assert "1 failed, 1 passed, 1 skipped" in in_ci.stdout and "skipped in CI (browser test)" in in_ci.stdout
    outside = _run(tmp_path, ci=False)
    assert outside.returncode == 0 and "1 passed, 2 skipped" in outside.stdout, outside.stdout
    fast = _run(tmp_path, "--fast", ci=True)
    assert fast.returncode == 0 and "1 passed, 1 skipped, 1 deselected" in fast.stdout, fast.stdout



def test_make_tests_workers_take_whole_files_and_the_model_files_as_one_unit(pytestconfig, monkeypatch):
    """`make test`'s scheduler (two xdist workers): a file's tests go to one worker together, and every file that
    trains or serves a model is one unit, so two never run at once (xdist's loadgroup no longer groups on pytest 9)."""
    from xdist.workermanage import Producer

    from tests.kinds import pytest_xdist_make_scheduler

    monkeypatch.setattr(pytestconfig.option, "tx", ["popen", "popen"])  # as `-n 2` makes it
    monkeypatch.setattr(pytestconfig.option, "loadscopereorder", True)
    sched = pytest_xdist_make_scheduler(pytestconfig, Producer("test", enabled=False))
    scope = sched._split_scope
    assert scope("tests/test_train_loop.py::test_a") == scope("tests/test_open_judge_vllm.py::test_b") == "models"
    assert scope("tests/test_config.py::test_a") == scope("tests/test_config.py::test_b[x-1]") == "tests/test_config.py"
    assert scope("tests/test_sizes.py::test_a") != scope("tests/test_config.py::test_a")
