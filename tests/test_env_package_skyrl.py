"""The package's skyrl-gym environment (rubricrl_webapp.skyrl) in its own environment (``make envs``:
.envs/skyrl, skyrl-gym without verifiers), made by name through skyrl-gym's registry and stepped against the
reward service on 127.0.0.1 (the real browser, the offline judge): a single-turn episode's reward equals
``rubricrl score``'s for the same app alone; in a multi-turn episode the second user turn is what the service
found and the fixed app's reward is the episode's; a missing reward raises, never a 0."""
from __future__ import annotations

import pytest

from tasks.llm import get_provider
from tests.fixtures.environments import BROKEN, FIXED, STACKS, in_stack, offline_service
from tests.fixtures.service import alone, fixture_tasks

pytestmark = pytest.mark.skipif(not (STACKS / "skyrl").exists(), reason="no .envs/skyrl: run `make envs`")
TASK = next(t for t in fixture_tasks() if t.query_id == "q-counter")

# one episode, driven as SkyRL's generator drives an env: make by name, init, step each app until done
EPISODE = """
import json, sys
import skyrl_gym
from rubricrl_webapp.skyrl import register
from rubricrl_webapp.service import RewardMissing
register()
url, task, apps, max_turns = json.loads(sys.stdin.read())
env = skyrl_gym.make("rubricrl-webapp", env_config={"service_url": url},
                     extras={"reward_spec": {"task": task}, "max_turns": max_turns})
env.init([{"role": "user", "content": task["query"]}])
steps = []
try:
    for app in apps:
        out = env.step(app)
        steps.append(out)
        if out["done"]:
            break
except RewardMissing as e:
    steps.append({"missing": str(e)})
print(json.dumps({"steps": steps, "metrics": env.get_metrics()}))
"""


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    with offline_service(tmp_path_factory.mktemp("skyrl") / "data") as running:
        yield running


def episode(url: str, apps: list[str], max_turns: int) -> dict:
    return in_stack("skyrl", EPISODE, [url, TASK.model_dump(mode="json"), apps, max_turns])


def scored_alone(svc, app: str) -> float:
    return alone(svc.engine.project, TASK, app, get_provider("offline"))["reward"]


def test_single_turn_reward_equals_rubricrl_score_alone(svc):
    out = episode(svc.url, [BROKEN], 1)
    [step] = out["steps"]
    assert step["done"] and step["observations"] == [] and step["reward"] == pytest.approx(scored_alone(svc, BROKEN))
    assert out["metrics"]["turns"] == 1.0 and out["metrics"]["runtime_valid"] == 0.0


def test_multi_turn_second_app_sees_the_findings_and_scores_higher(svc):
    out = episode(svc.url, [BROKEN, FIXED], 2)
    first, second = out["steps"]
    broken, fixed = scored_alone(svc, BROKEN), scored_alone(svc, FIXED)
    assert not first["done"] and first["reward"] == 0.0 and first["metadata"]["turn_reward"] == pytest.approx(broken)
    [turn] = first["observations"]
    assert turn["role"] == "user" and turn["content"].startswith(f"Your app scored {broken:g}")
    assert "TypeError" in turn["content"]
    assert second["done"] and second["reward"] == pytest.approx(fixed) and fixed > broken


def test_a_missing_reward_raises_and_is_never_a_zero():
    out = episode("http://127.0.0.1:9", [FIXED], 1)  # nothing listens: the service gave no answer
    assert out["steps"] == [{"missing": out["steps"][0]["missing"]}] and "gave no answer" in out["steps"][0]["missing"]
