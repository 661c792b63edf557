"""``rubricrl score``'s JSON on the environment's fixtures, byte for byte against a stored copy (real headless
Chromium, the CDN mirror, the offline judge): a refactor of the evidence, the judge or the reward changes no
output. A verdict rule changed on purpose regenerates it: ``.venv/bin/python -m tests.test_score_golden``, and the
diff of tests/fixtures/score_golden/ is read and explained in the commit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemas.config.env import EnvConfig, RuntimeConfig
from schemas.rubric import Task

FIX = Path(__file__).parent / "fixtures"
GOLDEN = FIX / "score_golden" / "score.json"
CFG = RuntimeConfig(concurrency=4)
# the machine's, not the app's: how long a step took in wall time, and how the app fared beside others before the
# re-check alone whose verdict stands (a load time-out or a stopped page, as the load had it)
VOLATILE = frozenset({"duration_s", "runtime_rechecked_from"})
pytestmark = [pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                 reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh"),
              pytest.mark.skipif(not CFG.cdn_root().is_dir(), reason="npm ci --prefix vendor/cdn --ignore-scripts")]


def _apps() -> list[tuple[str, Task, str]]:
    counter = Task.model_validate(json.loads((FIX / "env" / "task_counter.json").read_text()))
    apps = [(p.name, counter, p.read_text()) for p in sorted((FIX / "env").glob("*.txt"))]
    ix = FIX / "env" / "interaction"
    tasks = {k: Task.model_validate(v) for k, v in json.loads((ix / "tasks.json").read_text()).items()}
    for p in sorted(ix.iterdir()):
        if p.suffix in (".html", ".txt"):
            task = next(t for k, t in tasks.items() if p.name.startswith(k))
            text = p.read_text()
            apps.append((p.name, task, text if p.suffix == ".txt" else f"```html\n{text}\n```"))
    return apps


def _stable(value):
    # every list as the environment ordered it: requests of one moment reach the route in either order, and the
    # evidence keeps them in one order (``BlockedRequest.order``), so the findings made from them keep one too
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def score_fixtures() -> str:
    """The score JSON of every fixture app, keyed by file name, as stored."""
    from rubricrl.score_cmd import score_output
    from tasks.env.runtime import BrowserRuntime
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm import get_provider

    apps = _apps()
    with BrowserRuntime(CFG) as rt:
        res = score_batch([ScoreInput(n, t, r) for n, t, r in apps], provider=get_provider("offline"), runtime=rt,
                          cfg=EnvConfig(runtime=CFG))
    out = {r.key: _stable(score_output(r, text, None, None, None)) for r, (_n, _t, text) in zip(res, apps)}
    return json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_score_json_is_byte_identical_on_the_fixtures():
    got = score_fixtures()
    want = GOLDEN.read_text(encoding="utf-8")
    if got != want:
        import difflib

        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "stored", "now"))[:80])
        pytest.fail(f"rubricrl score's JSON changed on the fixtures:\n{diff}")


if __name__ == "__main__":
    GOLDEN.write_text(score_fixtures(), encoding="utf-8")
    print(f"wrote {GOLDEN}")
