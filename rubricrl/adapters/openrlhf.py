"""OpenRLHF: the environment as its remote reward (``--reward.remote_url``), over HTTP or as a file.

OpenRLHF's single-turn executor (``openrlhf/utils/agent.py``: ``SingleTurnAgentExecutor``) scores each
generated sample by POSTing ``{"query": [full text], "prompts": [prompt], "labels": [label]}`` to every
URL in ``--reward.remote_url`` (or, when the value ends in ``.py``, by calling that file's
``reward_func(queries, prompts, labels)``) and reads ``rewards``, ``scores`` (dynamic filtering) and
``extra_logs`` (logged per sample) from the answer. Here:

- ``label`` is the sample's ``query_id`` (``--data.label_key`` names the dataset column holding it);
- the response is the ``query`` after its ``prompt`` (OpenRLHF's ``query`` is the decoded prompt and
  response tokens together);
- ``rewards`` and ``scores`` are the environment's reward; a missing reward is NaN, since OpenRLHF has
  no missing reward: with ``--algo.dynamic_filtering_enable`` a group whose mean score is NaN falls
  outside every range and is dropped (``samples_generator.py``), the nearest OpenRLHF has to dropping
  the response; without it a NaN reaches the advantages (docs/adapters.md);
- ``extra_logs``: ``rubricrl/reward_missing``, ``rubricrl/tier`` (0 format_invalid .. 3 valid, NaN
  missing), ``rubricrl/rubric_score``, ``rubricrl/format_valid`` per sample.

Server: ``rubricrl serve-env`` answers ``POST /openrlhf/get_reward``. File: ``--reward.remote_url
/path/to/rubricrl/adapters/openrlhf.py`` scores in the trainer's process (or through ``service.url``).
"""
from __future__ import annotations

import re
from typing import Any

from rubricrl.adapters import number, tier_number
from rubricrl.service.requests import RequestError

_TAIL = 200  # characters of the prompt's end that locate the response when the decode changed the prompt
_SLACK = 64  # how far past the prompt's own length the decoded prompt may end
_FIELD = re.compile(r"^items\[(\d+)\](?:\.(\w+))?")


def response_of(query: str, prompt: str) -> str | None:
    """The response in OpenRLHF's ``query`` (prompt + response decoded together); None if the prompt is not
    found in it (pure)."""
    if query.startswith(prompt):
        return query[len(prompt):]
    tail = prompt[-_TAIL:].strip()
    # the prompt's end where the decoded prompt ends, not an echo of it inside the response
    at = query.rfind(tail, 0, len(prompt) + _SLACK) if tail else -1
    return query[at + len(tail):] if at >= 0 else None


def openrlhf_items(data: Any) -> list[dict[str, Any]]:
    """The ``/score`` items of one OpenRLHF reward request; a malformed one is a 422 naming its field."""
    if not isinstance(data, dict):
        raise RequestError(422, "body", 'send {"query": [...], "prompts": [...], "labels": [...]}')
    lists = {}
    for name in ("query", "prompts", "labels"):
        value = data.get(name)
        if not isinstance(value, list):
            raise RequestError(422, name, "missing or not a list (OpenRLHF's remote reward protocol)")
        lists[name] = value
    n = len(lists["query"])
    if len(lists["prompts"]) != n or len(lists["labels"]) != n:
        raise RequestError(422, "labels", f"query, prompts and labels must have one entry each per sample (got "
                                          f"{n}, {len(lists['prompts'])}, {len(lists['labels'])})")
    items = []
    for i, (query, prompt, label) in enumerate(zip(lists["query"], lists["prompts"], lists["labels"])):
        if not isinstance(label, str) or not label:
            raise RequestError(422, f"labels[{i}]", "must be the sample's query_id; point --data.label_key at "
                                                    "the dataset column that holds it")
        if not isinstance(query, str) or not isinstance(prompt, str):
            raise RequestError(422, f"query[{i}]", "query and prompt must be strings")
        response = response_of(query, prompt)
        if response is None:
            raise RequestError(422, f"query[{i}]", "does not contain its prompt, so the response cannot be cut "
                                                   "out; the query must be the decoded prompt followed by the "
                                                   "response")
        items.append({"query_id": label, "response": response})
    return items


def renamed(e: RequestError) -> RequestError:
    """A ``/score`` item error renamed to the OpenRLHF field it came from (items[3].query_id -> labels[3])."""
    m = _FIELD.match(e.field)
    if m is None:
        return RequestError(e.status, "query" if e.field == "items" else e.field, e.message, e.limit)
    field = {"query_id": "labels", None: "query"}.get(m.group(2), "query")
    return RequestError(e.status, f"{field}[{m.group(1)}]", e.message, e.limit)


def openrlhf_answer(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenRLHF's answer from the service's answers, in sample order (pure)."""
    rewards = [number(a.get("reward")) for a in answers]
    return {"rewards": rewards, "scores": list(rewards),
            "extra_logs": {"rubricrl/reward_missing": [float(a.get("reward") is None) for a in answers],
                           "rubricrl/tier": [tier_number(a.get("tier")) for a in answers],
                           "rubricrl/rubric_score": [number(a.get("rubric_score")) for a in answers],
                           "rubricrl/format_valid": [number(a.get("format_valid")) for a in answers]}}


def reward_func(queries: list[str], prompts: list[str], labels: list[str], **_: Any) -> dict[str, Any]:
    """OpenRLHF's file form (``--reward.remote_url .../openrlhf.py``): the same answer as the HTTP route."""
    from rubricrl.adapters.client import scorer

    try:
        items = openrlhf_items({"query": list(queries), "prompts": list(prompts), "labels": list(labels)})
    except RequestError as e:
        raise ValueError(str(e)) from None
    return openrlhf_answer(scorer().score(items))
