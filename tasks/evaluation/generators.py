"""What evaluate compares (paper 4.1, Table 1): generators, the benchmark's queries, and their responses.

A generator is one of
- a policy checkpoint (a Hugging Face directory; sampled by the flow with the GRPO job's engine),
- a folder of responses: ``<query_id>.txt`` (run 0) or ``run-<k>/<query_id>.txt`` (run k),
- ``policy:sft`` (the train-sft checkpoint) or ``policy:newest`` (the newest policy checkpoint, RL after
  train-rl), resolved in the data directory when the flow runs (the demo compares the two),
- a model behind an API: ``api:anthropic/<model>`` or ``api:openai/<model>@<base_url>`` (any
  OpenAI-compatible endpoint, e.g. a vLLM server). It answers the generation prompt through the LLM
  layer (cache, ledger, budget, batches as configured in ``llm.*``); run k is the k-th independent
  sample of the same request, cached under its own key.

The benchmark is ``heldout`` (our held-out split), ``ingested`` (every query of the ingested
``benchmark_queries`` stage that has a rubric reference) or the ingested benchmark by name (its file name,
with or without ``.jsonl``/``.json``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from schemas.config.evaluation import BUILTIN_BENCHMARKS, EvalConfig
from schemas.layout import FINAL_MODEL
from schemas.rubric import Task
from tasks.rl.checkpoints import is_model_dir, model_identity, newest_policy, sft_policy_dir
from tasks.llm.base import LLMRequest
from tasks.llm.replies import TextOutput
from tasks.sft.teacher import GENERATION_PROMPT, offline_teacher_answer

API_PREFIX = "api:"
POLICY_PREFIX = "policy:"
POLICY_ALIASES = ("sft", "newest")
API_PROVIDERS = ("anthropic", "openai")
STAGE = "eval_generations"  # ledger stage of API generators' calls
_RUN_DIR = re.compile(r"^run-(\d+)$")
_API = re.compile(r"^api:(?P<provider>[a-z]+)/(?P<model>[^@]+?)(?:@(?P<base_url>\S+))?$")


def resolve_policy_alias(raw: str, data_dir: Path) -> Path | None:
    """``policy:sft`` / ``policy:newest`` -> that checkpoint in ``data_dir`` (None: not trained yet); another
    name after ``policy:`` is a ValueError naming the aliases."""
    name = raw.removeprefix(POLICY_PREFIX)
    if name not in POLICY_ALIASES:
        raise ValueError(f"generator {raw!r}: the policy aliases are "
                         f"{', '.join(POLICY_PREFIX + a for a in POLICY_ALIASES)}")
    if name == "newest":
        return newest_policy(data_dir)
    sft = sft_policy_dir(data_dir)
    return sft if is_model_dir(sft) else None


def read_response_folder(folder: Path) -> dict[int, dict[str, str]]:
    """run -> query_id -> response text from ``<query_id>.txt`` (run 0) or ``run-<k>/<query_id>.txt``."""
    runs: dict[int, dict[str, str]] = {}
    for f in sorted(folder.glob("*.txt")):
        runs.setdefault(0, {})[f.stem] = f.read_text(encoding="utf-8", errors="replace")
    for d in sorted(folder.iterdir()):
        m = _RUN_DIR.match(d.name)
        if d.is_dir() and m:
            runs.setdefault(int(m.group(1)), {}).update(
                {f.stem: f.read_text(encoding="utf-8", errors="replace") for f in sorted(d.glob("*.txt"))})
    if not runs or not any(runs.values()):
        raise ValueError(f"{folder} holds no responses; put one <query_id>.txt per query in it (or run-<k>/ folders)")
    return runs


def model_label(path: Path, taken: set[str]) -> str:
    """A short unique label: the directory name, with its parent for ``final_model`` directories."""
    base = f"{path.parent.name}/{path.name}" if path.name == FINAL_MODEL else path.name
    return unique_label(base, taken)


def unique_label(base: str, taken: set[str]) -> str:
    label, k = base, 2
    while label in taken:
        label, k = f"{base}#{k}", k + 1
    return label


def parse_generator(raw: str, taken: set[str]) -> dict[str, Any]:
    """One generator spec (label, path, kind, identity; API ones also provider, model, base_url)."""
    if raw.startswith(API_PREFIX):
        m = _API.match(raw)
        if not m or m["provider"] not in API_PROVIDERS:
            raise ValueError(f"generator {raw!r}: write api:anthropic/<model> or api:openai/<model>@<base_url> "
                             f"(providers: {', '.join(API_PROVIDERS)})")
        return {"label": unique_label(f"{m['provider']}/{m['model']}", taken), "path": raw, "kind": "api",
                "identity": raw, "provider": m["provider"], "model": m["model"], "base_url": m["base_url"]}
    p = Path(raw).resolve()
    if not p.is_dir():
        raise ValueError(f"evaluation generator {raw!r} is not a directory; give a checkpoint (final_model), a "
                         "folder of <query_id>.txt responses, or api:anthropic/<model> / api:openai/<model>@<url>")
    return {"label": model_label(p, taken), "path": str(p), "kind": "checkpoint" if is_model_dir(p) else "responses",
            "identity": model_identity(p)}


def benchmark_name(file_name: str) -> str:
    """An ingested benchmark's name: its file name without the extension (``interactscience.jsonl`` ->
    ``interactscience``)."""
    return re.sub(r"\.(jsonl|json)$", "", file_name)


def benchmark_query_ids(kind: str, all_ids: list[str], ingested: dict[str, str] | None,
                        held_out: Any) -> list[str]:
    """The benchmark's query ids among those with a rubric reference, sorted. ``ingested``: query id -> the
    name of the benchmark it was ingested from (None: nothing was ingested)."""
    if kind == "heldout":
        return sorted(q for q in all_ids if held_out(q))
    if ingested is None:
        raise ValueError(f"evaluation.benchmark={kind} but no benchmark was ingested; run "
                         "`rubricrl ingest FILE.jsonl` and build-rubrics first")
    names = sorted(set(ingested.values()))
    if kind not in (*BUILTIN_BENCHMARKS, *names):
        raise ValueError(f"evaluation.benchmark is {kind!r}; allowed: {', '.join((*BUILTIN_BENCHMARKS, *names))} "
                         "(the held-out split, every ingested query, or an ingested benchmark by its file name)")
    have = set(all_ids)
    return sorted(q for q, name in ingested.items() if q in have and kind in ("ingested", name))


def benchmark_meta(store: Any, meta: dict[str, dict[str, Any]]) -> tuple[dict[str, str] | None,
                                                                         dict[str, dict[str, Any]]]:
    """Ingested query ids with their benchmark's name (None: nothing ingested) and the meta with the
    benchmark's own labels over ours."""
    for m in meta.values():
        m["category"] = (m.get("category_ids") or [None])[0]
    if store.manifest("benchmark_queries") is None:
        return None, meta
    rows = store.read("benchmark_queries",
                      columns=["query_id", "benchmark", "category", "domain", "difficulty"]).to_pylist()
    for b in rows:
        meta.setdefault(b["query_id"], {}).update({k: b[k] for k in ("category", "domain", "difficulty") if b[k]})
    return {b["query_id"]: benchmark_name(b["benchmark"] or "") for b in rows}, meta


def generation_request(task: Task, run: int, max_tokens: int, temperature: float) -> LLMRequest:
    """The generation prompt for one query; the offline rule (no key) is the offline teacher's app."""
    return LLMRequest(stage=STAGE, key=f"{task.query_id}:{run}", prompt=GENERATION_PROMPT,
                      variables={"query": task.query, "task_json": task.model_dump_json()},
                      output_model=TextOutput, max_tokens=max_tokens, temperature=temperature, sample=run,
                      offline_rule=lambda v: {"text": offline_teacher_answer(Task.model_validate_json(v["task_json"]))})


def api_rollouts(spec: dict[str, Any], queries: list[Task], runs: int, provider: Any, *, max_tokens: int,
                 temperature: float, concurrency: int) -> list[dict[str, Any]]:
    """Rollout rows of an API generator: response text, output tokens and seconds per response.

    A response served from the cache has no generation time of this run (``generation_s`` None).
    A failed call becomes an empty response: it scores as format-invalid, never crashes the run.
    """
    reqs = [generation_request(t, r, max_tokens, temperature) for r in range(runs) for t in queries]
    results = provider.complete_bulk(reqs, concurrency=concurrency)
    out = []
    for req, res in zip(reqs, results):
        qid, run = req.key.rsplit(":", 1)
        out.append({"rollout_id": f"{spec['label']}:{run}:{qid}", "query_id": qid, "run": int(run),
                    "response": res.output.text if res.output is not None else "",
                    "output_tokens": res.usage.output_tokens if res.output is not None else None,
                    "generation_s": None if res.cached or res.batch else res.latency_s})
    return out


def folder_rollouts(spec: dict[str, Any]) -> list[dict[str, Any]]:
    runs = read_response_folder(Path(spec["path"]))
    return [{"rollout_id": f"{spec['label']}:{r}:{q}", "query_id": q, "run": r, "response": text,
             "output_tokens": None, "generation_s": None}
            for r, by_q in sorted(runs.items()) for q, text in sorted(by_q.items())]


def api_provider(spec: dict[str, Any], llm_cfg: Any) -> Any:
    """The LLM-layer provider of an API generator: the judge's cache, ledger, budget and batch settings,
    this generator's provider, model and endpoint. A missing key fails here, naming the variable."""
    import os

    from tasks.llm.factory import DEFAULT_KEY_ENV, make_provider

    key_env = DEFAULT_KEY_ENV[spec["provider"]]
    if not os.environ.get(key_env):
        raise ValueError(f"generator {spec['path']}: set {key_env} (a self-hosted OpenAI-compatible server accepts "
                         "any value)")
    cfg = llm_cfg.model_copy(update={"provider": spec["provider"], "model": spec["model"],
                                     "base_url": spec["base_url"], "api_key_env": None})
    return make_provider(config=cfg)
