"""The environment through the real ``verifiers`` package: ``load_environment`` over a published
``rl_queries`` split, evaluated with a scripted chat model (the real ``openai`` SDK against the local
fake API), the real browser and the offline judge. Rewards equal ``rubricrl score``'s for the same apps
alone; a missing reward is an error in the rollout's state, masked (NaN, advantage 0), never a 0; in a
multi-turn episode the second turn sees the first app's errors and dead controls, and an app that fixes
them gains while one that ignores them does not."""
from __future__ import annotations

import math

import pytest
from openai import AsyncOpenAI

from fakes.fake_openai import FakeOpenAI
from rubricrl.adapters.client import scorer_for
from rubricrl.environments.verifiers import load_environment
from tasks.llm import get_provider
from tests.fixtures.environments import (BROKEN, FIRST_APPS, FIXED, SLOW, ScriptedPolicy, SlowScorer,
                                         interaction_app, published_split)
from tests.fixtures.service import alone, fixture_tasks

TASKS = {t.query_id: t for t in fixture_tasks()}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return published_split(tmp_path_factory.mktemp("verifiers") / "data")


@pytest.fixture(scope="module")
def scorer(project):
    return scorer_for(project)  # the in-process route: the service's engine, one browser


def evaluate(env, reply, query_id=None, rollouts=1, **kw):
    """verifiers' evaluation of the whole dataset, or ``rollouts`` of one query, against ``reply``."""
    with FakeOpenAI(reply=reply) as api:
        client = AsyncOpenAI(base_url=api.base_url + "/v1", api_key="test-key", max_retries=0)
        if query_id is None:
            return env.evaluate_sync(client=client, model="scripted", **kw)
        rows = [r for r in env.dataset.to_list() if r["info"]["query_id"] == query_id] * rollouts
        return env.generate_sync(rows, client=client, model="scripted", **kw)


def sets(project):
    return [f"data_dir={project.data_dir}", "llm.provider=offline"]


def test_single_turn_rewards_equal_rubricrl_score_alone(project, scorer):
    import verifiers as vf

    # verifiers' own loader, as vf-eval and prime-rl load an environment by module name
    env = vf.load_environment("rubricrl.environments.verifiers", split="rl_queries", sets=sets(project),
                              scorer=scorer)
    assert len(env.dataset) == 3 and env.env_id == "rubricrl"
    out = evaluate(env, ScriptedPolicy({q: [app] for q, app in FIRST_APPS.items()}))
    provider = get_provider("offline")
    for state in out["state"]:
        q = state["info"]["query_id"]
        want = alone(project, TASKS[q], FIRST_APPS[q], provider)
        assert state["reward"] == pytest.approx(want["reward"]) and state["error"] is None
        m = state["metrics"]
        assert m["runtime_valid"] == float(want["runtime_valid"]) and m["reward_missing"] == 0.0
        assert m["turns"] == 1.0 and m["turn_1_reward"] == pytest.approx(want["reward"])
    assert sorted(out["reward"]) != [out["reward"][0]] * 3  # the apps span outcomes
    assert set(out["metrics"]) >= {"reward", "format_valid", "rubric_score", "checks_passed", "reward_missing"}


def test_missing_reward_masks_only_that_rollout(project, scorer):
    from rubricrl.environments.verifiers import RubricRubric

    env = load_environment(split="all", sets=sets(project), scorer=SlowScorer(scorer, delay_s=4.0),
                           sample_timeout_s=1.0)
    good_app, bad_app = interaction_app("button_wired.html"), interaction_app("button_unwired.html")
    apps = iter([good_app, bad_app, good_app + SLOW])
    out = evaluate(env, lambda body: next(apps), "q-button", rollouts=3, max_concurrent=1)
    by_app = {s["rubricrl_episode"].turns[0].app: s for s in out["state"]}
    slow, good, bad = by_app[good_app + SLOW], by_app[good_app], by_app[bad_app]
    assert slow["info"]["query_id"] == "q-button"
    assert isinstance(slow["error"], Exception) and "environments.sample_timeout_s" in str(slow["error"])
    assert math.isnan(slow["reward"]) and slow["advantage"] == 0.0 and slow["metrics"]["reward_missing"] == 1.0
    assert good["error"] is None and bad["error"] is None and good["reward"] > bad["reward"]
    baseline = (good["reward"] + bad["reward"]) / 2  # the scored rollouts only
    assert good["advantage"] == pytest.approx(good["reward"] - baseline)
    assert bad["advantage"] == pytest.approx(bad["reward"] - baseline)
    assert isinstance(env.rubric, RubricRubric)


@pytest.mark.parametrize("second, gains", [(FIXED, True), (BROKEN, False)], ids=["fixes", "ignores"])
def test_multi_turn_second_app_after_the_observation(project, scorer, second, gains):
    env = load_environment(split="all", sets=sets(project), scorer=scorer, max_turns=2)
    policy = ScriptedPolicy({"q-counter": [BROKEN, second]})
    out = evaluate(env, policy, "q-counter")
    (state,) = out["state"]
    turns = state["rubricrl_episode"].turn_rewards()
    assert len(turns) == 2 and state["error"] is None
    shown = max(policy.seen, key=len)  # the second request: the query, then what the environment found
    assert len(shown) == 2
    observation = shown[1]
    assert "TypeError" in observation and "display.style.color = settings.color;" in observation
    assert "Increment, Reset" in observation and "[major] D1" in observation
    assert state["reward"] == turns[1] and state["metrics"]["turn_1_reward"] == turns[0]
    assert (turns[1] > turns[0]) is gains and (turns[1] == turns[0]) is not gains
