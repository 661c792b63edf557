"""The standalone environment package (environments/rubricrl_webapp) in its own verifiers 0.4 environment
(``make envs``: .envs/verifiers), run by ``vf-eval`` and ``vf-validate`` as a user runs them: a scripted policy
served by the local fake OpenAI API, the reward service on 127.0.0.1 (the real browser; the judge through the
real anthropic SDK against the local fake, which fails on one marked app). An episode's reward equals
``rubricrl score``'s for the same app alone; the second turn of a repair episode sees what the service found
and its app scores higher; a missing reward fails its episode, and prime-rl's rule leaves the rest of the
group its advantages."""
from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from fakes.fake_openai import FakeOpenAI
from rubricrl.export_tasks import task_lines
from rubricrl.service.engine import ScoreEngine
from tasks.llm import get_provider
from tests.fixtures.environments import BROKEN, FIXED, ScriptedPolicy, query_id_of
from tests.fixtures.service import JUDGE_FAILS, alone, fixture_tasks, judged_project, running_service

BIN = Path(__file__).resolve().parents[1] / ".envs" / "verifiers" / "bin"
pytestmark = pytest.mark.skipif(not (BIN / "vf-eval").exists(), reason="no .envs/verifiers: run `make envs`")
TASK = next(t for t in fixture_tasks() if t.query_id == "q-counter")
LOST = FIXED.replace("</body>", JUDGE_FAILS + "</body>")  # the judge fails on it: a missing reward


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # a dummy key for the local fake, gone when the module ends
        mp.setenv("ANTHROPIC_API_KEY", "test-key")
        with judged_project(tmp_path_factory.mktemp("package") / "data") as cfg:
            with running_service(ScoreEngine(cfg)) as running:
                yield running


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    path.write_text("".join(line + "\n" for line in task_lines([TASK])))
    return path


@pytest.fixture(scope="module")
def alone_rewards(svc) -> dict[str, float]:
    """``rubricrl score``'s reward for each app scored by itself, once for the module."""
    project = svc.engine.project
    provider = get_provider(config=project.resolved_llm())
    return {name: alone(project, TASK, app, provider)["reward"] for name, app in (("broken", BROKEN), ("fixed", FIXED))}


def vf(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "FAKE_KEY": "test-key"}
    done = subprocess.run([str(BIN / tool), "rubricrl-webapp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def vf_eval(svc, tasks_file, tmp_path, reply, *args: str) -> list[dict]:
    """vf-eval's episodes (traces.jsonl) of the task file against the scripted ``reply``."""
    with FakeOpenAI(reply=reply) as api:
        vf("vf-eval", "-m", "scripted", "--client.base-url", api.base_url + "/v1", "--client.api-key-var",
           "FAKE_KEY", "--no-push", "-o", str(tmp_path / "out"), "--env.taskset.path", str(tasks_file),
           "--env.taskset.task.service-url", svc.url, *args, cwd=tmp_path)
    [traces] = (tmp_path / "out").glob("*/traces.jsonl")
    return [json.loads(line) for line in traces.read_text().splitlines()]


def test_vf_eval_repair_episode_sees_the_findings_and_the_fix_scores_higher(svc, tasks_file, tmp_path, alone_rewards):
    policy = ScriptedPolicy({"q-counter": [BROKEN, FIXED]})
    [ep] = vf_eval(svc, tasks_file, tmp_path, policy, "--env.taskset.task.max-turns", "2")
    [trace] = ep["traces"]
    m, first, fixed = trace["metrics"], alone_rewards["broken"], alone_rewards["fixed"]
    assert m["turns"] == 2.0 and m["turn_1_reward"] == pytest.approx(first)
    assert trace["rewards"]["reward"]["score"] == pytest.approx(fixed) and fixed > first
    second_user_turn = policy.seen[-1][-1]
    assert second_user_turn.startswith(f"Your app scored {first:g}") and "TypeError" in second_user_turn


def prime_rl_advantages(episodes: list[dict]) -> dict[int, float]:
    """prime-rl's GRPO advantages of a group, by trace position (its orchestrator: envs.py Env.run marks every
    trace of a failed episode errored; algo/base.py iter_trainable_traces skips errored traces; algo/grpo.py
    gives each kept trace its reward minus the kept traces' mean reward)."""
    kept = {i: sum(r["score"] * r["weight"] for r in t["rewards"].values())
            for i, ep in enumerate(episodes) for t in ep["traces"] if ep["ok"] and t["ok"]}
    mean = sum(kept.values()) / len(kept)
    return {i: r - mean for i, r in kept.items()}


def test_single_turn_rewards_equal_rubricrl_score_alone_and_a_missing_one_fails_its_episode_only(
        svc, tasks_file, tmp_path, alone_rewards):
    """One group of three single-turn episodes: the two scored apps get ``rubricrl score``'s reward for each alone;
    the one whose judge fails has no reward, fails its episode, and prime-rl's rule keeps the rest their advantages."""
    apps = iter([BROKEN, LOST, FIXED])
    lock = threading.Lock()

    def reply(body):
        assert query_id_of(body) == "q-counter"
        with lock:
            return next(apps)

    episodes = vf_eval(svc, tasks_file, tmp_path, reply, "-r", "3", "-c", "1")
    lost = [ep for ep in episodes if not ep["ok"]]
    assert len(lost) == 1 and "RewardMissing" in lost[0]["errors"][-1]["message"]
    [trace] = lost[0]["traces"]
    assert not trace["ok"] and trace["errors"][0]["type"] == "RewardMissing" and trace["rewards"] == {}
    assert trace["metrics"]["reward_missing"] == 1.0
    broken, fixed = alone_rewards["broken"], alone_rewards["fixed"]
    got = []
    for ep in (ep for ep in episodes if ep["ok"]):
        [kept] = ep["traces"]
        assert kept["ok"] and kept["metrics"]["turns"] == 1.0
        got.append(kept["rewards"]["reward"]["score"])
    assert sorted(got) == pytest.approx([broken, fixed]) and broken < fixed  # the two apps, each its own reward
    advantages = prime_rl_advantages(episodes)
    mean = (broken + fixed) / 2  # the two scored episodes alone: the lost one is no 0 in the baseline
    assert sorted(advantages.values()) == pytest.approx([broken - mean, fixed - mean])


def test_vf_validate_passes_and_the_service_takes_every_shipped_task(svc, tmp_path):
    vf("vf-validate", "--runtime.type", "subprocess", "--rich", "false", "-o", str(tmp_path / "val"),
       "--taskset.task.service-url", svc.url, cwd=tmp_path)
    [summary] = (tmp_path / "val").glob("*/summary.json")
    gold = json.loads(summary.read_text())["checks"]["gold"]
    shipped = Path(__file__).resolve().parents[1] / "environments/rubricrl_webapp/rubricrl_webapp/tasks.jsonl"
    n = len(shipped.read_text().splitlines())
    assert gold["valid"] == n and gold["invalid"] == gold["error"] == 0
