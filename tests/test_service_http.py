"""``rubricrl serve-env`` over real HTTP on 127.0.0.1 (uvicorn in a thread), the real browser and the offline
judge: answers equal ``rubricrl score``'s for the same response alone, in request order and streamed; bad
input is refused with the field and the limit while the server keeps serving; a client that leaves leaks
no page; the token; the time limit; the metrics."""
from __future__ import annotations

import json
import re
import time

import httpx
import pytest

from rubricrl.service.engine import ScoreEngine, verdict
from tasks.llm import get_provider
from tests.fixtures.service import (FIX, fixture_pairs, fixture_tasks, open_contexts, project, publish_tasks,
                                    running_service)

TASK = json.loads((FIX / "task_counter.json").read_text())


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    data = tmp_path_factory.mktemp("service") / "data"
    publish_tasks(data, fixture_tasks())
    cfg = project(data, "llm.provider=offline", f"service.max_request_bytes={32 * 2**20}")
    with running_service(ScoreEngine(cfg)) as running:
        yield running


@pytest.fixture(scope="module")
def expected(svc):
    """Each fixture response scored alone in this process by ``rubricrl score``'s code."""
    from tests.fixtures.service import alone

    provider = get_provider("offline")
    return [verdict(alone(svc.engine.project, t, r, provider)) for t, r in fixture_pairs()]


def items():
    """The fixture pairs as /score items: by query_id, every third one with its task inline."""
    return [{"task": TASK, "response": r} if t.query_id == "q-counter" and i % 3 == 0 else
            {"query_id": t.query_id, "response": r} for i, (t, r) in enumerate(fixture_pairs())]


def core(answer: dict) -> dict:
    """An answer's verdict without what the service adds to ``rubricrl score``'s output (query id, reason)."""
    return {k: v for k, v in verdict(answer).items() if k not in ("query_id", "reason")}


def metric(text: str, name: str, **labels: str) -> float:
    sel = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    m = re.search(rf"^{re.escape(name)}{re.escape('{' + sel + '}') if sel else ''} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def test_score_answers_equal_rubricrl_score_alone_in_request_order(svc, expected):
    r = httpx.post(f"{svc.url}/score", json={"items": items()}, timeout=300)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["provider"] == "offline" and body["request_id"]
    results = body["results"]
    assert [a["index"] for a in results] == list(range(len(expected)))
    assert [core(a) for a in results] == expected
    assert [a["query_id"] for a in results] == [t.query_id for t, _ in fixture_pairs()]
    tiers = {a["tier"] for a in results}
    assert {"valid", "format_invalid", "source_invalid", "runtime_invalid"} <= tiers  # the pool spans the tiers
    assert all(a["reason"] is None for a in results if a["reward"] is not None)


def test_an_answer_is_what_the_rubricrl_score_command_prints(svc):
    """The CLI as a user runs it, against the service's answer for the same task and response."""
    import subprocess
    import sys

    from tests.conftest import REPO

    response = (FIX / "throws.txt").read_text()
    env = {"RUBRICRL_DATA_DIR": str(svc.engine.project.data_dir), "RUBRICRL_LLM__PROVIDER": "offline",
           "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    cli = subprocess.run([sys.executable, "-m", "rubricrl.cli", "score", "--task", str(FIX / "task_counter.json"),
                          "--response", str(FIX / "throws.txt")], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert cli.returncode == 0, cli.stderr[-2000:]
    answer = httpx.post(f"{svc.url}/score", json={"items": [{"task": TASK, "response": response}]},
                        timeout=120).json()["results"][0]
    assert core(answer) == verdict(json.loads(cli.stdout)) and answer["tier"] == "runtime_invalid"


def test_stream_answers_each_item_once_with_the_same_answers(svc, expected):
    got = []
    with httpx.stream("POST", f"{svc.url}/score/stream", json={"items": items()}, timeout=300) as r:
        assert r.status_code == 200 and r.headers["x-rubricrl-provider"] == "offline"
        got = [json.loads(line) for line in r.iter_lines() if line]
    assert sorted(a["index"] for a in got) == list(range(len(expected)))
    assert [core(a) for a in sorted(got, key=lambda a: a["index"])] == expected


BAD = [
    ("malformed JSON", b'{"items": [', 400, "body", None),
    ("non-UTF-8 bytes", b'{"items": [{"query_id": "q-key", "response": "\xff\xfe"}]}', 400, "body", None),
    ("missing response", json.dumps({"items": [{"query_id": "q-key"}]}).encode(), 422, "items[0].response", None),
    ("missing items", b'{"rollouts": []}', 422, "items", None),
    ("unknown query_id", json.dumps({"items": [{"query_id": "q-missing", "response": "x"}]}).encode(), 422,
     "items[0].query_id", None),
    ("20 MB response", json.dumps({"items": [{"query_id": "q-key", "response": "x" * 20_000_000}]}).encode(), 413,
     "items[0].response", "1000000 characters (service.max_response_chars)"),
    ("10,000 items", json.dumps({"items": [{"query_id": "q-key", "response": "x"}] * 10_000}).encode(), 413,
     "items", "1024 items (service.max_items)"),
    ("33 MB body", b" " * (33 * 2**20), 413, "body", f"{32 * 2**20} bytes (service.max_request_bytes)"),
]


@pytest.mark.parametrize("name, body, status, field, limit", BAD, ids=[b[0] for b in BAD])
def test_bad_input_gets_a_4xx_naming_field_and_limit_and_the_server_keeps_serving(svc, name, body, status, field,
                                                                                  limit):
    r = httpx.post(f"{svc.url}/score", content=body, headers={"content-type": "application/json"}, timeout=120)
    assert r.status_code == status, r.text[:500]
    err = r.json()["error"]
    assert err["field"] == field and field in err["message"] and err["limit"] == limit
    ok = httpx.post(f"{svc.url}/score", json={"items": [{"query_id": "q-counter", "response": "no app here"}]},
                    timeout=60)
    assert ok.status_code == 200 and ok.json()["results"][0]["tier"] == "format_invalid"


def test_a_chunked_body_over_the_limit_is_refused_while_it_is_read(svc):
    def chunks():  # no Content-Length: the server only learns the size by reading
        for _ in range(40):
            yield b" " * 2**20

    r = httpx.post(f"{svc.url}/score", content=chunks(), headers={"content-type": "application/json"}, timeout=120)
    assert r.status_code == 413 and r.json()["error"]["field"] == "body"
    assert httpx.get(f"{svc.url}/health", timeout=10).status_code == 200


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(svc):
    import socket

    host, port = svc.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"POST /score HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {40 * 2**20}\r\n\r\n".encode())
        head = sock.recv(4096).decode("latin-1")  # no byte of the body sent: only the declared size refuses it
    assert head.startswith("HTTP/1.1 413") and '"field":"body"' in head.replace(" ", "")


def test_a_timeout_beside_other_apps_is_checked_again_and_one_alone_is_not(svc):
    """Each item is its own batch of one, which the runtime never re-checks: the service does, as the runtime
    does within a batch, so a verdict load could have caused is not taken from a crowded browser."""
    loop = (FIX / "infinite_loop.txt").read_text()
    clean = (FIX / "clean.txt").read_text()
    crowd = [{"task": TASK, "response": loop}] + [{"task": TASK, "response": clean}] * 3
    a = httpx.post(f"{svc.url}/score", json={"items": crowd}, timeout=300).json()["results"]
    assert a[0]["evidence"]["runtime_status"] == "load_timeout" and a[0]["tier"] == "runtime_invalid"
    assert a[0]["evidence"]["runtime_rechecked_from"] == "load_timeout"
    assert all(x["tier"] == "valid" and x["evidence"]["runtime_rechecked_from"] is None for x in a[1:])
    lone = httpx.post(f"{svc.url}/score", json={"items": crowd[:1]}, timeout=300).json()["results"][0]
    assert lone["tier"] == "runtime_invalid" and lone["evidence"]["runtime_rechecked_from"] is None


def test_a_client_that_leaves_leaks_no_page_and_the_server_goes_on(svc):
    slow = (FIX / "interaction/anim_runs.html").read_text()
    n = 3 * svc.engine.env.runtime.concurrency  # more apps than browser slots: some wait in the queue
    body = {"items": [{"query_id": "q-key", "response": f"```html\n{slow}<!-- {i} -->\n```"} for i in range(n)]}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{svc.url}/score", json=body, timeout=httpx.Timeout(60, read=0.5))
    deadline = time.monotonic() + 90
    while True:
        text = httpx.get(f"{svc.url}/metrics", timeout=10).text
        gone = metric(text, "rubricrl_service_requests_total", code="499", route="score")
        idle = metric(text, "rubricrl_service_items_running") + metric(text, "rubricrl_service_items_queued") == 0
        if (gone and idle) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert gone == 1 and idle, text
    assert metric(text, "rubricrl_browser_apps_in_flight") == 0
    assert open_contexts(svc.engine.runtime) == 0
    ok = httpx.post(f"{svc.url}/score", json={"items": [{"query_id": "q-counter", "response": "plain text"}]},
                    timeout=60)
    assert ok.status_code == 200


def test_metrics_count_requests_items_and_bounds(svc):
    httpx.post(f"{svc.url}/score", json={"items": items()[:3]}, timeout=120)
    text = httpx.get(f"{svc.url}/metrics", timeout=10).text
    assert metric(text, "rubricrl_service_requests_total", code="200", route="score") >= 1
    assert metric(text, "rubricrl_service_request_seconds_count", route="score") >= 1
    assert sum(metric(text, "rubricrl_service_items_total", tier=t) for t in
               ("valid", "format_invalid", "source_invalid", "runtime_invalid", "missing")) >= 3
    assert 0 < metric(text, "rubricrl_judge_in_flight_peak") <= metric(text, "rubricrl_judge_concurrency_limit")
    for gauge in ("rubricrl_browser_queue_depth", "rubricrl_judge_queue_depth", "rubricrl_service_items_queued"):
        assert re.search(rf"^{gauge} ", text, re.M), gauge
    health = httpx.get(f"{svc.url}/health", timeout=10).json()
    assert health["status"] == "ok" and health["offline"] is True and health["browser"] is True


def test_a_scoring_failure_is_a_null_reward_with_the_reason(svc):
    """The environment failing (here its browser is gone) is a missing reward, never a verdict on the app."""
    from rubricrl.service.browser import ServiceBrowser
    from rubricrl.service.requests import parse_request
    from tasks.env.runtime import BrowserRuntime

    engine = ScoreEngine(svc.engine.project)
    gone = BrowserRuntime(engine.env.runtime)
    gone.close()
    engine.runtime = ServiceBrowser(gone)
    try:
        job = parse_request({"items": [{"task": TASK, "response": (FIX / "clean.txt").read_text()}]}, engine.cfg,
                            engine.tasks, False)[0]
        a = engine.score_one(job)
    finally:
        engine.close()
    assert a["reward"] is None and a["tier"] == "missing"
    assert a["reason"].startswith("scoring failed: RuntimeError: BrowserRuntime is closed")


def test_an_advantage_gets_the_token_weights_rubricrl_score_prints(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO
    from training.tiny import build_tokenizer

    tok_dir = tmp_path / "tok"
    build_tokenizer().save_pretrained(tok_dir)
    cfg = project(tmp_path / "data", "llm.provider=offline", "env.runtime.enabled=false",
                  f"service.tokenizer={tok_dir}")
    response = (FIX / "syntax_error.txt").read_text()
    with running_service(ScoreEngine(cfg)) as s:
        a = httpx.post(f"{s.url}/score", json={"items": [{"task": TASK, "response": response, "advantage": -0.7}]},
                       timeout=120).json()["results"][0]
    env = {"RUBRICRL_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    cli = subprocess.run([sys.executable, "-m", "rubricrl.cli", "score", "--task", str(FIX / "task_counter.json"),
                          "--response", str(FIX / "syntax_error.txt"), "--no-browser", "--provider", "offline",
                          "--advantage", "-0.7", "--tokenizer", str(tok_dir)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr[-2000:]
    printed = json.loads(cli.stdout)
    assert a["token_weights"] == printed["token_weights"] and a["token_offsets"] == printed["token_offsets"]
    assert len(a["token_weights"]) == len(a["token_offsets"]) > 0 and max(a["token_weights"]) > 1.0  # attributed


def test_with_a_token_requests_without_it_get_401(tmp_path):
    cfg = project(tmp_path / "data", "llm.provider=offline", "env.runtime.enabled=false")
    token = "t" * 24
    body = {"items": [{"task": TASK, "response": "text"}]}
    with running_service(ScoreEngine(cfg), token=token) as s:
        assert httpx.post(f"{s.url}/score", json=body).status_code == 401
        wrong = httpx.post(f"{s.url}/score", json=body, headers={"Authorization": "Bearer " + "u" * 24})
        assert wrong.status_code == 401 and "RUBRICRL_SERVICE_TOKEN" in wrong.json()["error"]["message"]
        assert httpx.get(f"{s.url}/metrics").status_code == 401
        assert httpx.post(f"{s.url}/score", json=body, headers={"Authorization": f"Bearer {token}"}).status_code == 200
        # OpenRLHF sends no headers: its route alone also takes the token as a query parameter
        assert httpx.post(f"{s.url}/score?token={token}", json=body).status_code == 401
        rlhf = {"query": ["Q: x\nA: text"], "prompts": ["Q: x\nA: "], "labels": ["q-none"]}
        assert httpx.post(f"{s.url}/openrlhf/get_reward", json=rlhf).status_code == 401
        assert httpx.post(f"{s.url}/openrlhf/get_reward?token={token}", json=rlhf).status_code == 422  # past the token


def test_an_item_past_the_time_limit_gets_a_null_reward_with_the_reason(tmp_path, monkeypatch):
    from fakes.fake_anthropic import FakeAnthropic
    from fakes.judge_replies import diagnosis_reply

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeAnthropic(reply=diagnosis_reply, latency_s=3.0) as api:
        cfg = project(tmp_path / "data", "llm.provider=anthropic", f"llm.base_url={api.base_url}",
                      "env.runtime.enabled=false", "service.request_timeout_s=1")
        clean = (FIX / "clean.txt").read_text()
        with running_service(ScoreEngine(cfg)) as s:
            t0 = time.monotonic()
            r = httpx.post(f"{s.url}/score", json={"items": [{"task": TASK, "response": clean}]}, timeout=30)
            took = time.monotonic() - t0
            a = r.json()["results"][0]
            text = httpx.get(f"{s.url}/metrics").text
    assert r.status_code == 200 and took < 2.5
    assert a["reward"] is None and a["tier"] == "missing" and "service.request_timeout_s" in a["reason"]
    assert metric(text, "rubricrl_service_rewards_missing_total", cause="timeout") == 1
