"""The ingested benchmark's own metric of each evaluated app, beside our reward (``official_*`` of eval_results).

By the format the benchmark was ingested in (``schemas.contracts.benchmark.OFFICIAL_METRICS``):

- InteractScience, ``pft_pass_rate``: its Playwright functional tests (``tasks/evaluation/pft.py``), on the page
  its own harness would write: the first fenced ``html`` block of the response with HTML entities unescaped
  (the benchmark's ``extract_and_save_code.py``); a response without one fails every test, as there.
- ArtifactsBench, ``checklist_score``: its multimodal checklist judge (``tasks/evaluation/checklist_judge.py``)
  through the configured judge provider, shown the screenshots evaluate kept. Offline (no key) there is no
  such judge: no score, and the note says so.
- WebGen-Bench, ``test_cases_met``: the share of the task's test cases met. Its test cases are given rubric
  items; one is met when our judge decided the rubric layer and found nothing critical or major on it. (The
  benchmark's own harness has a GUI agent carry each test case out; our judge's verdict stands in for it.)
- generic (MiniAppBench's data and harness are not public): no official metric.

A null score always comes with the reason in ``official_note``: the protocol could not judge the app here
(no reference screenshot, a library the mirror lacks, no judge, the judge failed), never a low score for it.

Run: ``official_columns(rows, judgments, official_inputs(store, cfg.evaluation.official, cfg.env.runtime,
provider, data_dir))`` -> one dict of ``official_*`` columns per row.
"""
from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.config.env import RuntimeConfig
from schemas.config.evaluation import OfficialConfig
from schemas.contracts.benchmark import OFFICIAL_METRICS
from tasks.env.extract import extract_html
from tasks.evaluation.checklist_judge import PROMPT, checklist_score, judge_request
from tasks.evaluation.pft import PftApp, app_score, page_path, run_pft, runner_problem, runner_version
from tasks.llm.base import ImageInput
from tasks.llm.prompts import load_prompt
from tasks.env.rewards import failed_items
from tasks.progress import Progress

FENCED_HTML = re.compile(r"```html\s*\n(.*?)\s*```", re.S)  # InteractScience's own extraction of the page
_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S | re.I)
# An official note's sentence (read back by the benches' labels, bench/realapps_pairs.py): the benchmark's harness
# unescapes HTML entities in the whole page it writes, and that changed one of the app's scripts.
HARNESS_CHANGED_SCRIPT = "the benchmark's harness unescapes the page's HTML entities, which changed a script"
OFF = "official metric not computed (evaluation.official.enabled=false)"
NOT_INGESTED = "not a query of an ingested benchmark"
NO_PROTOCOL = "the generic format has no official protocol (MiniAppBench's data and harness are not public)"
OFFLINE_JUDGE = ("offline: ArtifactsBench's protocol needs a multimodal judge model; set ANTHROPIC_API_KEY (or "
                 "llm.provider=openai with a vision model)")


@dataclass
class OfficialInputs:
    bench: dict[str, dict[str, Any]]  # query_id -> its benchmark_queries row
    questions: dict[str, str]  # query_id -> the benchmark's own text of the task (the queries stage)
    given: dict[str, list[tuple[str, str]]]  # query_id -> (id, requirement) of its given rubric items (test cases)
    cfg: OfficialConfig
    runtime: RuntimeConfig
    provider: Any  # the judge provider (ArtifactsBench's judge)
    data_dir: Path  # screenshot paths in the rows are relative to it


def official_inputs(store: Any, cfg: OfficialConfig, runtime: RuntimeConfig, provider: Any,
                    data_dir: Path) -> OfficialInputs | None:
    """What the protocols need, read once per evaluate run; None when the official metric is off."""
    if not cfg.enabled:
        return None
    bench: dict[str, dict[str, Any]] = {}
    if store.manifest("benchmark_queries") is not None:
        bench = {r["query_id"]: r for r in store.read("benchmark_queries").to_pylist()}
    questions = {r["query_id"]: r["text"] for r in store.read("queries", columns=["query_id", "text"]).to_pylist()
                 if r["query_id"] in bench} if bench else {}
    given: dict[str, list[tuple[str, str]]] = {}
    if bench and store.manifest("rubric_items") is not None:
        for r in store.read("rubric_items", columns=["query_id", "id", "requirement", "given"]).to_pylist():
            if r["given"]:
                given.setdefault(r["query_id"], []).append((r["id"], r["requirement"]))
    return OfficialInputs(bench, questions, given, cfg, runtime, provider, Path(data_dir))


def protocol_identity(cfg: OfficialConfig) -> dict[str, Any]:
    """What the official scores depend on beyond the data and settings: the judge prompt and the test runner."""
    return {"judge_prompt": load_prompt(PROMPT).fingerprint, "pft_runner": runner_version(cfg)}


def check_runner(inputs: OfficialInputs | None, query_ids: list[str]) -> None:
    """Fail before any work when the benchmark's tests are to run and the runner cannot (the fix named)."""
    if inputs is None or not any((inputs.bench.get(q) or {}).get("official_tests") for q in query_ids):
        return
    problem = runner_problem(inputs.cfg)
    if problem is not None:
        raise ValueError(f"the ingested benchmark's Playwright tests cannot run: {problem}")


def _cols(metric: str | None, score: float | None, detail: list[dict[str, Any]], note: str | None) -> dict[str, Any]:
    return {"official_metric": metric, "official_score": score, "official_detail": detail, "official_note": note}


def official_columns(rows: list[dict[str, Any]], judgments: list[dict[str, Any] | None],
                     inputs: OfficialInputs | None) -> list[dict[str, Any]]:
    """The ``official_*`` columns of each eval_results row (``judgments[i]``: row i's judgment, or None)."""
    if inputs is None:
        return [_cols(None, None, [], OFF) for _ in rows]
    out: list[dict[str, Any] | None] = [None] * len(rows)
    by_format: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        b = inputs.bench.get(r["query_id"])
        if b is None:
            out[i] = _cols(None, None, [], NOT_INGESTED)
        elif OFFICIAL_METRICS.get(b["format"]) is None:
            out[i] = _cols(None, None, [], NO_PROTOCOL)
        else:
            by_format.setdefault(b["format"], []).append(i)
    protocols = {"interactscience": _pft, "artifactsbench": _checklist_judge, "webgen-bench": _test_cases}
    for fmt, idx in by_format.items():
        got = protocols[fmt]([rows[i] for i in idx], [judgments[i] for i in idx], inputs)
        for i, (score, detail, note) in zip(idx, got):
            out[i] = _cols(OFFICIAL_METRICS[fmt], score, detail, note)
    assert all(o is not None for o in out), "every row is scored by its format's protocol or says why not"
    return out  # type: ignore[return-value]


Scored = tuple[float | None, list[dict[str, Any]], str | None]


def interactscience_page(response: str) -> str | None:
    """The page InteractScience's harness writes for a response: its first ``html`` block, entities unescaped."""
    m = FENCED_HTML.search(response or "")
    return html_lib.unescape(m.group(1).strip()) if m else None


def harness_changes_script(response: str) -> bool:
    """Whether the harness's unescaping (``interactscience_page``) changes a script of the page: ``'&#39;'`` in a
    script's own escaping function becomes three quotes, a syntax error: the benchmark tests another page."""
    m = FENCED_HTML.search(response or "")
    return m is not None and any(html_lib.unescape(s) != s for s in _SCRIPT.findall(m.group(1)))


def with_harness_note(response: str, scored: Scored) -> Scored:
    """``scored`` with ``HARNESS_CHANGED_SCRIPT`` added to its note where the harness changed a script: the score
    stays the benchmark's (its protocol), the note tells a reader it is not the app's."""
    if not harness_changes_script(response):
        return scored
    score, detail, note = scored
    return score, detail, f"{note}; {HARNESS_CHANGED_SCRIPT}" if note else HARNESS_CHANGED_SCRIPT


def _pft(rows: list[dict[str, Any]], _j: list[Any], inputs: OfficialInputs) -> list[Scored]:
    """The rows' apps through the benchmark's own specs (a row without a usable spec gets none, and says so)."""
    apps: dict[int, PftApp] = {}
    why: dict[int, str] = {}
    for k, r in enumerate(rows):
        b = inputs.bench[r["query_id"]]
        if not b.get("official_tests"):
            why[k] = f"no Playwright spec was ingested for {b['external_id']} (rubricrl ingest FILE --tests PFT_tests/)"
            continue
        try:
            page_path(b["official_tests"])
        except ValueError as e:  # the benchmark's spec, not the app: no verdict
            why[k] = f"{b['official_tests_name']}: {e}"
            continue
        key = f"{k:04d}-" + re.sub(r"[^A-Za-z0-9_.-]", "_", b["external_id"])[:80]
        apps[k] = PftApp(key, b["official_tests_name"], b["official_tests"], interactscience_page(r["response"]))
    label = next((r["model"] for r in rows if r.get("model")), "apps")
    with Progress(f"official tests {label}", len(apps), unit="apps", verb="run") as progress:
        results = run_pft(list(apps.values()), inputs.runtime, inputs.cfg,
                          on_app=lambda _key, ran, passed: progress.update(1, tests_run=ran, tests_passed=passed))
    return [with_harness_note(rows[k]["response"], app_score(results[apps[k].key])) if k in apps else (None, [], why[k])
            for k in range(len(rows))]


def _images(row: dict[str, Any], data_dir: Path) -> list[ImageInput]:
    paths = [data_dir / row[c] for c in ("screenshot_load", "screenshot_probe") if row.get(c)]
    return [ImageInput.from_file(p) for p in paths if p.is_file()]


def _checklist_judge(rows: list[dict[str, Any]], _j: list[Any], inputs: OfficialInputs) -> list[Scored]:
    """The benchmark's judge on each app with its screenshots; an app whose screenshots are missing gets no score
    (a page without them would be judged as no page at all)."""
    if inputs.provider is None or inputs.provider.name == "offline":
        return [(None, [], OFFLINE_JUDGE) for _ in rows]
    out: list[Scored | None] = [None] * len(rows)
    reqs, idx = [], []
    for k, r in enumerate(rows):
        images = _images(r, inputs.data_dir)
        if extract_html(r["response"] or "") is not None and not images:
            out[k] = (None, [], f"no screenshot of the app to show the judge ({r.get('screenshot_note') or 'none kept'})")
            continue
        b = inputs.bench[r["query_id"]]
        reqs.append(judge_request(inputs.questions.get(r["query_id"], ""), r["response"] or "",
                                  b["official_checklist"], images, key=r["eval_id"],
                                  max_answer_chars=inputs.cfg.judge_max_answer_chars,
                                  max_tokens=inputs.cfg.judge_max_tokens))
        idx.append(k)
    for k, res in zip(idx, inputs.provider.complete_many(reqs)):
        out[k] = checklist_score(res, inputs.bench[rows[k]["query_id"]]["official_checklist"])
    return [o for o in out if o is not None]


def _test_cases(rows: list[dict[str, Any]], judgments: list[dict[str, Any] | None],
                inputs: OfficialInputs) -> list[Scored]:
    return [cases_met(r, j, inputs.given.get(r["query_id"], [])) for r, j in zip(rows, judgments)]


def cases_met(row: dict[str, Any], judgment: dict[str, Any] | None, cases: list[tuple[str, str]]) -> Scored:
    """WebGen-Bench's share of test cases met, from our judge's verdicts on the given items ``cases`` ((rubric
    item id, the test case's text) each) of one app (pure)."""
    item_ids, names = [c[0] for c in cases], [c[1] for c in cases]
    if not item_ids:
        return None, [], "the task's test cases are not in its rubric (run build-rubrics after ingest)"
    if row["tier"] == "format_invalid":  # no application: no test case can be met
        return 0.0, [{"name": n, "passed": False, "status": "unmet", "score": None,
                      "note": "no application in the response"} for n in names], None
    if judgment is None or row["tier"] == "missing" or judgment.get("gate_rubric_alignment") is None:
        return None, [{"name": n, "passed": None, "status": "undecided", "score": None, "note": None} for n in names], \
            "our judge gave no verdict on the rubric for this app: its test cases are undecided"
    failed = failed_items(judgment)
    detail = [{"name": n, "passed": i not in failed, "status": "unmet" if i in failed else "met", "score": None,
               "note": None} for i, n in zip(item_ids, names)]
    return sum(d["passed"] for d in detail) / len(detail), detail, f"judge {row.get('judge_provider')}"
