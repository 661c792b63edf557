"""The InteractScience corpus as benches use it: real LLM-written apps with labels nobody here wrote.

InteractScience (open-compass/InteractScience, Apache-2.0) gives per task an HTML implementation plan
(``data/interactscience.jsonl``), each model's answer (``eval/interactscience_lm_<model>.jsonl``) and the
results of the benchmark's own Playwright functional tests (``results/lm_results/PFT_test_results/
<model>_component_results.json``, for a few models only). The label of an app is the share of its PFT tests
that passed. The benchmark's VLM judge scored each model's screenshots against a checklist
(``results/lm_results/VQT_vlm_judge_results/<model>.jsonl``, 0-5 per screenshot): ``vlm_scores``.

Development split: tasks whose id starts with A to M (``DEV_FIRST``..``DEV_LAST``); the others are kept for
an independent measurement and no bench reads them unless asked (``--split holdout``).

Nothing of the benchmark is committed: a bench is given the path of a local copy of the repository
(``--corpus DIR`` or ``RUBRICRL_INTERACTSCIENCE``), and this module writes the user's inputs from it: a
JSONL file for ``rubricrl ingest`` and one response folder per model (``<query_id>.txt``).

Run: ``c = load(Path(dir)); c.write_queries(path); c.write_responses(model, folder); c.labels(model)``, or
``user_inputs(c, keep, prefix, limit, models)`` for all of a bench's inputs at once.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _safe  # noqa: F401 - the repo on sys.path, no paid call by accident

from tasks.evaluation.playwright_report import ANSI, pass_share, spec_outcomes, spec_task_id

DEV_FIRST, DEV_LAST = "A", "M"
ENV_VAR = "RUBRICRL_INTERACTSCIENCE"
# The models whose answers and PFT results are both in the public snapshot.
LABELLED_MODELS = ("Qwen2.5-Coder-32B-Instruct", "Qwen3-8B-Base", "gpt-oss-20b")


_EXPECTED = re.compile(r'Expected(?: string| value)?: "([^"\n]*)"\s*\n\s*Received(?: string| value)?: "([^"\n]*)"')


def same_number(message: str) -> bool:
    """A Playwright assertion error whose expected and received texts read as the same number (pure)."""
    m = _EXPECTED.search(message)
    if m is None:
        return False
    try:
        return float(m.group(1)) == float(m.group(2))
    except ValueError:
        return False


SPLITS = ("dev", "holdout", "all")  # dev: the tasks DEV_FIRST..DEV_LAST, holdout: the rest


def add_arguments(ap: Any, limit: int | None, models: list[str] | None, models_help: str | None = None) -> None:
    """The arguments every bench on this corpus takes: where it is, which split, how many tasks, which models'
    answers, and the data directory to keep (``data_dirs``); each bench gives its own defaults."""
    ap.add_argument("--corpus", default=None, help=f"local copy of InteractScience (or ${ENV_VAR})")
    ap.add_argument("--split", default="dev", choices=list(SPLITS))
    ap.add_argument("--limit", type=int, default=limit, help="the first N tasks of the split (sorted by id)")
    ap.add_argument("--models", nargs="*", default=models, help=models_help)
    ap.add_argument("--keep", default=None, help="data directory to use and keep (default: a temporary one)")


def in_split(task_id: str, split: str) -> bool:
    dev = DEV_FIRST <= task_id[:1].upper() <= DEV_LAST
    return dev if split == "dev" else not dev if split == "holdout" else split == "all"


def query_id(task_id: str) -> str:
    """The ``queries`` stage id ``rubricrl ingest`` gives the task (``ext-<id>``)."""
    return f"ext-{task_id}"


@dataclass
class Corpus:
    root: Path
    split: str = "dev"
    tasks: dict[str, dict] = field(default_factory=dict)  # task id -> the data line

    def answers(self, model: str) -> dict[str, str]:
        """task id -> the model's raw answer (markdown with an html block, as it was generated)."""
        path = self.root / "eval" / f"interactscience_lm_{model}.jsonl"
        out = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                obj = json.loads(line)
                if obj.get("id") in self.tasks and isinstance(obj.get("answer"), str):
                    out[obj["id"]] = obj["answer"]
        return out

    def pft_results(self, model: str) -> Path:
        return self.root / "results" / "lm_results" / "PFT_test_results" / f"{model}_component_results.json"

    def outcomes(self, model: str) -> dict[str, list]:
        """task id -> the published PFT outcomes of the model's app (``TestOutcome`` list); empty for a model
        whose PFT results the snapshot does not publish (most of its models)."""
        path = self.pft_results(model)
        if not path.is_file():
            return {}
        report = spec_outcomes(json.loads(path.read_text(encoding="utf-8")))
        return {spec_task_id(f): tests for f, tests in report.items() if spec_task_id(f) in self.tasks}

    def labels(self, model: str) -> dict[str, float]:
        """query id -> share of the app's PFT tests that passed."""
        return {query_id(t): s for t, tests in self.outcomes(model).items() if (s := pass_share(tests)) is not None}

    def format_only_labels(self, model: str) -> dict[str, float]:
        """query id -> the share of the app's PFT tests that passed, counting as passed a failed test whose every
        error is a text or value that reads as the same number the test expected (``"0"`` shown as ``"0.0"``).
        A diagnostic of how strict the labels are; the goals are measured on ``labels``."""
        path = self.pft_results(model)
        if not path.is_file():
            return {}
        out: dict[str, list[bool]] = {}

        def walk(suite: dict, file: str) -> None:
            for spec in suite.get("specs") or []:
                t = spec_task_id(spec.get("file") or file)
                if t in self.tasks:
                    last = ([r for x in spec.get("tests") or [] for r in x.get("results") or []] or [{}])[-1]
                    msgs = [ANSI.sub("", (e or {}).get("message") or "") for e in last.get("errors") or []]
                    out.setdefault(query_id(t), []).append(bool(spec.get("ok")) or bool(msgs) and all(map(same_number, msgs)))
            for child in suite.get("suites") or []:
                walk(child, child.get("file") or file)

        for suite in json.loads(path.read_text(encoding="utf-8")).get("suites") or []:
            walk(suite, suite.get("file") or suite.get("title") or "")
        return {q: sum(v) / len(v) for q, v in out.items() if v}

    def vlm_scores(self, model: str) -> dict[str, float] | None:
        """query id -> the benchmark's VLM judge score of the model's app: the mean over its screenshots of the
        judge's ``overall_score`` (the mean of its checklist's 0-5 scores, as ``vlm_as_judge.py`` writes it);
        None when the snapshot has no VLM-judge results for the model. (``results/vlm_results/`` holds the
        scores of the answers written from images, ``eval/interactscience_vlm_*``, not of these.)"""
        path = self.root / "results" / "lm_results" / "VQT_vlm_judge_results" / f"{model}.jsonl"
        if not path.is_file():
            return None
        shots: dict[str, list[float]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line) if line.strip() else {}
            if obj.get("id") in self.tasks and obj.get("overall_score") is not None:
                shots.setdefault(query_id(obj["id"]), []).append(float(obj["overall_score"]))
        return {q: sum(v) / len(v) for q, v in shots.items()}

    def write_queries(self, path: Path, limit: int | None = None) -> list[str]:
        """The split's tasks as an InteractScience JSONL file for ``rubricrl ingest``; returns the task ids."""
        ids = sorted(self.tasks)[:limit]
        path.write_text("".join(json.dumps(self.tasks[t]) + "\n" for t in ids), encoding="utf-8")
        return ids

    def write_responses(self, model: str, folder: Path, ids: list[str] | None = None) -> int:
        """One ``<query_id>.txt`` per answered task (an evaluate response folder); returns the count."""
        folder.mkdir(parents=True, exist_ok=True)
        n = 0
        for t, answer in self.answers(model).items():
            if ids is None or t in ids:
                (folder / f"{query_id(t)}.txt").write_text(answer, encoding="utf-8")
                n += 1
        return n


def data_dirs(keep: str | None, prefix: str) -> tuple[Path, Path]:
    """The data directory (``keep``, else a new temporary one) and the folder of the user's inputs beside it."""
    import tempfile

    data = Path(keep) if keep else Path(tempfile.mkdtemp(prefix=prefix))
    data.mkdir(parents=True, exist_ok=True)
    work = data.parent / f"{data.name}-inputs"
    work.mkdir(exist_ok=True)
    return data, work


def user_inputs(c: Corpus, keep: str | None, prefix: str, limit: int | None,
                models: list[str]) -> tuple[Path, Path, list[str], list[str]]:
    """``data_dirs``, the split's first ``limit`` task ids written in the inputs folder as ingest input, and one
    response folder per model."""
    data, work = data_dirs(keep, prefix)
    ids = c.write_queries(work / "interactscience.jsonl", limit)
    folders = []
    for m in models:
        c.write_responses(m, work / "responses" / m, ids)
        folders.append(str(work / "responses" / m))
    return data, work, ids, folders


def load(root: Path | str | None = None, split: str = "dev") -> Corpus:
    """The corpus at ``root`` (or ``$RUBRICRL_INTERACTSCIENCE``), restricted to ``split`` (dev | holdout | all)."""
    root = Path(root or os.environ.get(ENV_VAR) or "")
    data = root / "data" / "interactscience.jsonl"
    if not data.is_file():
        raise SystemExit(f"no InteractScience copy at {root!s}: pass --corpus DIR (or set {ENV_VAR}) to a local copy "
                         "of github.com/open-compass/InteractScience holding data/interactscience.jsonl")
    tasks = {}
    for line in data.read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            if in_split(obj["id"], split):
                tasks[obj["id"]] = obj
    return Corpus(root, split, tasks)
