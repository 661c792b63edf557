"""``rubricrl export-tasks``: the published queries and rubrics of a split, one JSON object a line, in the format
the standalone environment package reads (``environments/rubricrl_webapp``, docs/environments.md).

Each line is ``{"task": TASK.json, "prompt": [system, user]}``: ``task`` is what ``rubricrl score --task`` and
``POST /score`` take inline (query id, expanded query, rubric with its item checks), so the service scores it
whether or not it has published that query; ``prompt`` is the policy's first turn, the shared generation
prompt over the expanded query (as in training), so the package needs none of this repository's code.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from schemas.config.environments import SPLITS


def task_lines(tasks: list[Any]) -> list[str]:
    """One JSON line per task (``schemas.rubric.Task``)."""
    from rubricrl.environments.episode import prompt_messages

    return [json.dumps({"task": t.model_dump(mode="json"), "prompt": prompt_messages(t)}, ensure_ascii=False)
            for t in tasks]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("export-tasks", help="write a split's published queries and rubrics as JSONL for "
                              "the standalone environment package (environments/rubricrl_webapp)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", choices=SPLITS, default="rl_queries", help="rl_queries (the selected RL queries) "
                   "or all (every query with a published rubric)")
    p.add_argument("--benchmark", default=None, help="only the queries of one ingested benchmark file")
    p.add_argument("--limit", type=int, default=None, help="at most this many tasks (in query id order)")
    p.add_argument("--out", type=Path, default=None, help="the JSONL file to write (default: stdout)")
    return p


def run(args: argparse.Namespace, project: Any) -> int:
    from rubricrl.environments.episode import load_split

    tasks = load_split(project, args.split, args.benchmark)[:args.limit]
    text = "".join(line + "\n" for line in task_lines(tasks))
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"{len(tasks)} tasks -> {args.out}", file=sys.stderr)
    return 0
