"""``rubricrl export-tasks``: a split's published queries and rubrics as the standalone package's JSONL, each
task the same Task again when read back and its prompt the policy's first turn as in training."""
from __future__ import annotations

import json

from rubricrl.cli import main
from rubricrl.environments.episode import prompt_messages
from schemas.rubric import Task
from tests.fixtures.environments import FIRST_APPS, published_split
from tests.fixtures.service import fixture_tasks


def test_export_tasks_writes_the_split_with_its_rubrics_and_prompts(tmp_path):
    cfg = published_split(tmp_path / "data")
    out = tmp_path / "tasks.jsonl"
    assert main(["export-tasks", "--set", f"data_dir={cfg.data_dir}", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    want = {t.query_id: t for t in fixture_tasks()}
    assert sorted(r["task"]["query_id"] for r in rows) == sorted(FIRST_APPS)  # rl_queries, not every rubric
    for r in rows:
        task = Task.model_validate(r["task"])
        assert task == want[task.query_id] and r["prompt"] == prompt_messages(task)
    assert main(["export-tasks", "--set", f"data_dir={cfg.data_dir}", "--split", "all", "--limit", "2",
                 "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2
