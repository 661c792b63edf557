"""No paid call by accident: every bench and the test session run with the API keys removed (one helper,
tasks/llm/paid.py), unless RUBRICRL_ALLOW_PAID_CALLS=1."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tasks.llm.factory import DEFAULT_KEY_ENV
from tasks.llm.paid import ALLOW_PAID_ENV, drop_paid_keys

REPO = Path(__file__).resolve().parent.parent
BENCHES = sorted((REPO / "bench").glob("bench_*.py"))
OURS = ("tasks", "schemas", "flows", "training", "rubricrl", "tests")


def test_helper_drops_every_provider_key_unless_allowed():
    env = {"ANTHROPIC_API_KEY": "sk-a", "OPENAI_API_KEY": "sk-o", "PATH": "/bin"}
    assert sorted(drop_paid_keys(env)) == sorted(DEFAULT_KEY_ENV.values()) and env == {"PATH": "/bin"}
    allowed = {"ANTHROPIC_API_KEY": "sk-a", ALLOW_PAID_ENV: "1"}
    assert drop_paid_keys(allowed) == [] and allowed["ANTHROPIC_API_KEY"] == "sk-a"  # the twin: the flag keeps it


def test_every_bench_drops_the_keys_before_anything_of_ours():
    assert BENCHES
    for path in BENCHES:
        body = ast.parse(path.read_text()).body
        first_ours = next(i for i, n in enumerate(body)
                          if isinstance(n, (ast.Import, ast.ImportFrom))
                          and any((getattr(n, "module", None) or a.name).split(".")[0] in OURS + ("_safe",)
                                  for a in n.names))
        node = body[first_ours]
        assert isinstance(node, ast.Import) and node.names[0].name == "_safe", f"{path.name}: import _safe first"


def test_bench_synthesize_and_its_subprocesses_run_without_the_key():
    """The bench that would have sent ~59,400 paid calls: loaded with a key set, the key is gone from it."""
    # as `python bench/bench_synthesize.py` runs it (its folder first on sys.path), without calling main()
    code = (f"import os, runpy, sys; sys.path.insert(0, {str(REPO / 'bench')!r}); runpy.run_path("
            f"{str(REPO / 'bench' / 'bench_synthesize.py')!r}, run_name='loaded');"
            "print(os.environ.get('ANTHROPIC_API_KEY'), os.environ.get('OPENAI_API_KEY'))")
    env = {k: v for k, v in os.environ.items() if k != ALLOW_PAID_ENV}
    env.update(ANTHROPIC_API_KEY="sk-real-looking", OPENAI_API_KEY="sk-other")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["None", "None"]


def test_the_test_session_itself_has_no_key():
    assert not any(os.environ.get(k) for k in DEFAULT_KEY_ENV.values())
