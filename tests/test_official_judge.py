"""ArtifactsBench's protocol end to end against the local fake APIs (the real anthropic and openai SDKs): the
multimodal checklist judge gets the app's screenshots as images and the task's checklist in its prompt, its
"Overall Score" is parsed into the official score, a malformed answer gets one corrective retry and is then
missing, and the images are part of the cache key."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from schemas.config.env import RuntimeConfig
from schemas.config.evaluation import OfficialConfig
from tasks.evaluation.official import OFFLINE_JUDGE, OfficialInputs, official_columns
from tasks.evaluation.screenshots import FOLDER
from tasks.llm.offline import OfflineProvider
from tasks.queries.ingest import ingest_jsonl
from fakes.http_fake import Scripted
from fakes.images import request_images
from fakes.llm_fixtures import last_user_text
from fakes.llm_wire import Wire, make_wire

BENCH = Path(__file__).parent / "fixtures" / "benchmarks" / "artifacts_sample.jsonl"
APP = "```html\n<!DOCTYPE html><html><body><p id='t'>25:00</p><button>start</button></body></html>\n```"


def judge_reply(body: dict) -> str:
    return json.dumps({"Overall Score": 72, "reason": "start works; no pause; plain design"})


@pytest.fixture(params=["anthropic", "openai"])
def wire(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    w = make_wire(request.param, tmp_path, monkeypatch, reply=judge_reply)
    yield w
    w.api.stop()


@pytest.fixture
def setup(tmp_path: Path):
    """One ingested ArtifactsBench task, one evaluated row with its two kept screenshots."""
    got = ingest_jsonl(BENCH)
    bench = {r["query_id"]: r for r in got.benchmark.to_pylist()}
    questions = {r["query_id"]: r["text"] for r in got.queries.to_pylist()}
    data = tmp_path / "data"
    (data / FOLDER).mkdir(parents=True)
    for moment, colour in (("load", "white"), ("probe", "orange")):
        Image.new("RGB", (64, 40), colour).save(data / FOLDER / f"ab-{moment}.png")
    row = {"eval_id": "m:0:ext-902", "query_id": "ext-902", "response": APP, "tier": "valid",
           "screenshot_load": f"{FOLDER}/ab-load.png", "screenshot_probe": f"{FOLDER}/ab-probe.png",
           "screenshot_note": None}
    return bench, questions, data, row


def _inputs(setup, provider) -> OfficialInputs:
    bench, questions, data, _ = setup
    return OfficialInputs(bench, questions, {}, OfficialConfig(), RuntimeConfig(), provider, data)


def _calls(wire: Wire) -> list[dict]:
    path = "/v1/messages" if wire.kind == "anthropic" else "/v1/chat/completions"
    return [s.body for s in wire.api.seen(path, "POST") if s.path == path]


def test_the_judge_sees_the_screenshots_and_the_checklist_and_its_score_is_parsed(wire, setup):
    _, questions, data, row = setup
    (cols,) = official_columns([row], [None], _inputs(setup, wire.provider()))
    assert cols["official_metric"] == "checklist_score" and cols["official_score"] == pytest.approx(0.72)
    assert cols["official_detail"] == [{"name": "Overall Score", "passed": None, "status": "scored", "score": 72.0,
                                        "note": "start works; no pause; plain design"}]
    assert cols["official_note"] == f"judge {wire.kind}/{wire.provider().model}"
    (body,) = _calls(wire)
    shots = [(data / row[f"screenshot_{m}"]).read_bytes() for m in ("load", "probe")]
    assert request_images(body) == [("image/png", shots[0]), ("image/png", shots[1])]
    text = last_user_text(body)
    assert "1. [10 points] Does start count down from 25:00?" in text and "10. [10 points] Is the visual design" in text
    assert questions["ext-902"] in text and "<button>start</button>" in text


def test_a_malformed_answer_is_retried_once_then_missing(wire, setup):
    _, _, _, row = setup
    wire.api.push(Scripted(text="I would give it seven out of ten."), Scripted(text='{"Overall Score": 250}'))
    (cols,) = official_columns([row], [None], _inputs(setup, wire.provider()))
    assert cols["official_score"] is None and cols["official_detail"] == []
    assert "gave no score (missing)" in cols["official_note"] and "between 0 and 100" in cols["official_note"]
    calls = _calls(wire)
    assert len(calls) == 2 and "could not be used" in json.dumps(calls[1]["messages"][-1])
    assert request_images(calls[1]) == request_images(calls[0])  # the retry shows the same screenshots
    wire.api.push(Scripted(text="not JSON at all"))
    again = dict(row, eval_id="m:1:ext-902", response=APP + "\n<!-- run 1 -->")
    (fixed,) = official_columns([again], [None], _inputs(setup, wire.provider()))
    assert fixed["official_score"] == pytest.approx(0.72)  # one bad answer, then a good one: scored


def test_the_images_are_in_the_cache_key(wire, setup):
    _, _, data, row = setup
    provider = wire.provider()
    first = official_columns([row], [None], _inputs(setup, provider))
    assert official_columns([row], [None], _inputs(setup, provider)) == first and len(_calls(wire)) == 1  # cached
    Image.new("RGB", (64, 40), "black").save(data / row["screenshot_probe"])  # the same text, another screenshot
    official_columns([row], [None], _inputs(setup, provider))
    assert len(_calls(wire)) == 2


def test_offline_no_screenshot_and_no_page(setup, wire):
    _, _, _, row = setup
    (off,) = official_columns([row], [None], _inputs(setup, OfflineProvider()))
    assert off == {"official_metric": "checklist_score", "official_score": None, "official_detail": [],
                   "official_note": OFFLINE_JUDGE}
    unseen = dict(row, screenshot_load=None, screenshot_probe=None, screenshot_note="no browser")
    text_only = dict(row, eval_id="m:0:x", response="I cannot build that.", screenshot_load=None, screenshot_probe=None)
    shot, judged = official_columns([unseen, text_only], [None, None], _inputs(setup, wire.provider()))
    assert shot["official_score"] is None and "no screenshot of the app" in shot["official_note"]
    assert judged["official_score"] == pytest.approx(0.72)  # no page: judged from the text, as the benchmark does
    (body,) = _calls(wire)
    assert request_images(body) == [] and "I cannot build that." in last_user_text(body)
