"""``rubricrl serve-openenv``'s app over real HTTP and WebSocket on 127.0.0.1 (uvicorn in a thread) with the real
``openenv-core`` server and client, the real browser and the offline judge: reset and step give the reward
``rubricrl score`` gives the app alone; a missing reward (past the sample time limit) is masked, never 0; bad
input gets serve-env's 4xx naming the field and the limit; a multi-turn episode shows the policy what was
found and ends when the app passes; the token."""
from __future__ import annotations

import httpx
import pytest

from rubricrl.adapters.client import scorer_for
from rubricrl.environments.openenv import AppAction, RubricEnvClient, Runtime, create_openenv_app, step_apps
from tasks.llm import get_provider
from tests.fixtures.environments import BROKEN, FIXED, SLOW, SlowScorer, published_split
from tests.fixtures.service import alone, fixture_tasks, serving

TASKS = {t.query_id: t for t in fixture_tasks()}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return published_split(tmp_path_factory.mktemp("openenv") / "data", "environments.max_turns=2")


@pytest.fixture(scope="module")
def server(project):
    runtime = Runtime.of(project, "rl_queries", scorer=SlowScorer(scorer_for(project), delay_s=4.0))
    with serving(create_openenv_app(runtime, max_sessions=4)) as running:
        yield running


@pytest.fixture(scope="module")
def alone_reward(project):
    provider = get_provider("offline")
    return lambda q, app: alone(project, TASKS[q], app, provider)["reward"]


def test_reset_and_step_give_rubricrl_score_rewards_and_the_next_turn(server, alone_reward):
    with RubricEnvClient(server.url) as env:
        first = env.reset(query_id="q-counter")
        assert not first.done and first.reward is None
        assert TASKS["q-counter"].query in first.observation.prompt[-1]["content"]
        r1 = env.step(AppAction(app=BROKEN))
        assert r1.reward == pytest.approx(alone_reward("q-counter", BROKEN)) and not r1.done
        obs = r1.observation
        assert not obs.masked and obs.turn == 1 and obs.tier == "runtime_invalid"
        assert "display.style.color = settings.color;" in obs.feedback and "Increment, Reset" in obs.feedback
        assert obs.prompt[-2] == {"role": "assistant", "content": BROKEN} and obs.prompt[-1]["content"] == obs.feedback
        r2 = env.step(AppAction(app=FIXED))  # fixes what the feedback named: passes, the episode ends
        assert r2.done and r2.reward == pytest.approx(alone_reward("q-counter", FIXED)) and r2.reward > r1.reward
        assert r2.observation.metrics["turn_1_reward"] == r1.reward and r2.observation.metrics["turns"] == 2.0
        assert env.state().step_count == 2
        # the same apps, one single-turn episode each: the TRL route's helper
        assert step_apps(env, ["q-counter", "q-counter"], [BROKEN, FIXED]) == [r1.reward, r2.reward]


def test_missing_reward_is_masked_not_zero(server):
    body = {"action": {"app": FIXED + SLOW, "query_id": "q-counter"}, "timeout_s": 1.0}
    r = httpx.post(f"{server.url}/step", json=body, timeout=60)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["reward"] is None and out["done"] is True
    assert out["observation"]["masked"] is True and "sample_timeout_s=1" in out["observation"]["error"]
    assert out["observation"]["metrics"]["reward_missing"] == 1.0


BAD = [
    ("app over the limit", "/step", {"action": {"app": "x" * 1_000_001, "query_id": "q-counter"}}, 413, "action.app",
     "1000000 characters (service.max_response_chars)"),
    ("unknown query", "/step", {"action": {"app": "x", "query_id": "q-nope"}}, 422, "action.query_id", None),
    ("no episode", "/step", {"action": {"app": "x"}}, 409, "action.query_id", None),
    ("unknown query at reset", "/reset", {"query_id": "q-nope"}, 422, "query_id", None),
]


@pytest.mark.parametrize("name, route, body, status, field, limit", BAD, ids=[b[0] for b in BAD])
def test_bad_input_gets_serve_envs_4xx(server, name, route, body, status, field, limit):
    r = httpx.post(f"{server.url}{route}", json=body, timeout=60)
    assert r.status_code == status, r.text[:300]
    err = r.json()["error"]
    assert err["field"] == field and err["limit"] == limit
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200  # still serving


def test_the_token_is_asked_for(project):
    runtime = Runtime.of(project, "rl_queries", scorer=scorer_for(project))
    token = "t" * 32
    with serving(create_openenv_app(runtime, max_sessions=1, token=token)) as s:
        assert httpx.post(f"{s.url}/reset", json={}, timeout=30).status_code == 401
        ok = httpx.post(f"{s.url}/reset", json={"seed": 1}, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert ok.status_code == 200 and ok.json()["observation"]["query_id"] in runtime.tasks
        with pytest.raises(Exception):
            with RubricEnvClient(s.url) as env:
                env.reset()
        with RubricEnvClient(s.url, token=token) as env:
            assert env.reset(query_id="q-key").observation.query_id == "q-key"
