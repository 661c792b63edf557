"""The task file every stack reads: ``rubricrl export-tasks`` lines, ``{"task": TASK.json, "prompt": [system,
user]}``; the package ships ``tasks.jsonl``, made by rubricrl's offline pipeline (README.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TASKS = Path(__file__).with_name("tasks.jsonl")


def read_tasks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
