"""bench_token_model: the sizes behind the dry-run cost estimate (the ``cost`` section, ``schemas/config/cost.py``),
measured on real artefacts through the code that renders the prompts.

- Rubric stages: the paper's q5 (its recorded model answers in tests/fixtures/rubrics/q5, a real rubric) replayed
  through each stage's own prompt rendering: what each call carries beyond its instructions, and what it writes.
- Applications: every model's answers in a local copy of InteractScience (``--corpus``), real LLM-written apps.
- The judge: its prompt as ``score_batch`` renders it for a sample of those apps under the q5 rubric, with the
  browser's evidence of each (observed facts, the executable checks' results), in the headless browser.
- Its reply: the paper's G.2 finding (tests/fixtures/attribution/g2_diagnosis.json) per unmet item, times the
  share of their benchmark's functional tests real apps fail (InteractScience's published PFT results).
- Query synthesis: the rendered request of candidate specs drawn as the flow draws them.

Means, not medians: a budget is a sum. Tokens are characters / ``llm.chars_per_token``. Prints the parts and the
``cost.*`` values they give; asserts nothing.
Run: ``.venv/bin/python bench/bench_token_model.py --corpus /work/corpus/InteractScience [--apps 24]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import _safe  # noqa: F401 - the repo on sys.path, no paid call by accident
import interactscience

from schemas.checks import parse_check
from schemas.config.llm import LLMConfig
from schemas.rubric import CompactRubric, Task
from tasks.llm.base import LLMRequest, Provider, RawReply, Usage
from tasks.llm.prompts import load_prompt

REPO = Path(__file__).resolve().parent.parent
Q5 = REPO / "tests" / "fixtures" / "rubrics" / "q5"
G2 = REPO / "tests" / "fixtures" / "attribution" / "g2_diagnosis.json"
ANSWERS = {"expansions": "1_expansion.json", "requirements": "2_requirements.json", "modules": "3_modules.json",
           "rubric_candidates": "4_candidates.json", "rubric_references": "5_reference.json",
           "rubric_checks": "6_checks.json"}
LAYERS = ("static_check", "code_simulation", "rubric_alignment")


class Replay(Provider):
    """Replies with a fixed answer per stage and keeps each call's request and reply."""

    name, model = "replay", "recorded"

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls: list[tuple[LLMRequest, str, str]] = []  # (request, rendered system + user, reply)

    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        reply = self.answers.get(request.stage) or json.dumps({k: {"name": k, "critical": [], "major": [],
                                                                   "minor": []} for k in LAYERS})
        self.calls.append((request, system + messages[0]["content"], reply))
        return RawReply(reply, Usage())


def instructions(prompt: str) -> int:
    """Characters of a prompt file's own text (system and user template, placeholders left out)."""
    import re

    t = load_prompt(prompt)
    return len(re.sub(r"\{\{\s*\w+\s*\}\}", "", t.system + t.user))


def q5_replay(provider: Replay) -> Task:
    """Every rubric stage of q5 replayed in order; the Task the environment judges with (checks included)."""
    from tasks.rubrics import checks as checks_stage
    from tasks.rubrics.pipeline import QueryContext, build_part, query_hash
    from tasks.rubrics.stages import stage_defs

    text = json.loads((Q5 / "query.json").read_text())["query"]
    ctx = QueryContext("q5", text, query_hash("q5", text))
    settings = {"max_tokens": 10_000, "temperature": 0.0}
    ref: dict = {}
    for i, sd in enumerate(stage_defs()):
        rows = build_part(sd, [ctx], provider, settings, None, None, 1)[0].to_pylist()
        if i == 0:
            ctx.expanded_query, ctx.trace = rows[0]["expanded_query"], rows[0]
        elif i < 4:
            setattr(ctx, ["", "requirements", "modules", "candidates"][i], rows)
        else:
            ref = rows[0]
            ctx.reference = json.loads(ref["reference_json"])
    chk = build_part(checks_stage.STAGE, [ctx], provider, settings, None, None, 1)[0].to_pylist()
    kept = {r["item_id"]: parse_check(json.loads(r["check_json"])) for r in chk if r["check_status"] == "kept"}
    return Task(query_id="q5", query=ref["expanded_query"],
                rubric=CompactRubric.model_validate_json(ref["compact_json"]).with_checks(kept))


def app_answers(corpus: Path) -> list[str]:
    """Every model's answer to every task in the corpus, as generated (markdown around an html block)."""
    out = []
    for f in sorted((corpus / "eval").glob("interactscience_lm_*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            a = json.loads(line).get("answer") if line.strip() else None
            if isinstance(a, str) and a.strip():
                out.append(a)
    return out


def unmet_share(corpus: Path) -> tuple[float, int]:
    """Mean share of an app's functional tests that fail, over the labelled models' apps (and how many apps)."""
    c = interactscience.load(corpus, "all")
    shares = [1.0 - s for m in interactscience.LABELLED_MODELS for s in c.labels(m).values()]
    return statistics.mean(shares), len(shares)


def query_specs(n: int) -> list[int]:
    """Characters of the synthesize_query request's variables (rendered minus instructions) for ``n`` specs."""
    from tasks.queries.synthesize import PROMPT, candidate_spec, prompt_variables, sample_personas

    personas, tpl = sample_personas(2000, 17), load_prompt(PROMPT)
    base = instructions(PROMPT)
    return [sum(map(len, tpl.render(prompt_variables(candidate_spec(i, 17, personas, 2, 4))))) - base
            for i in range(n)]


def mean(values: list[int]) -> int:
    return int(statistics.mean(values)) if values else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="local copy of open-compass/InteractScience")
    ap.add_argument("--apps", type=int, default=24, help="apps loaded in the browser for the judge's evidence")
    args = ap.parse_args()
    cpt = LLMConfig().chars_per_token
    tok = lambda chars: round(chars / cpt)  # noqa: E731
    replay = Replay({s: (Q5 / f).read_text() for s, f in ANSWERS.items()})
    task = q5_replay(replay)
    print(f"characters per token: {cpt} (llm.chars_per_token)\n\n== rubric stages, q5 replayed (characters)")
    print(f"{'stage':<20} {'instructions':>12} {'carried':>8} {'writes':>7}")
    for req, rendered, reply in replay.calls:
        instr = instructions(req.prompt)
        print(f"{req.stage:<20} {instr:>12} {len(rendered) - instr:>8} {len(reply):>7}")
    reqs = {r.stage: r for r, _x, _y in replay.calls}
    items = len(task.rubric.initial_state) + len(task.rubric.dynamic)
    parts = {"query": len(reqs["expansions"].variables["query"]), "expanded_query": len(task.query),
             "rubric_items": len(reqs["rubric_checks"].variables["items"])}
    parts.update({k: len((Q5 / ANSWERS[s]).read_text()) for k, s in (
        ("expansion", "expansions"), ("requirements", "requirements"), ("modules", "modules"),
        ("candidates", "rubric_candidates"), ("reference", "rubric_references"), ("checks", "rubric_checks"))})
    parts["query_spec"] = mean(query_specs(200))

    from tasks.env.extract import extract_html

    answers = app_answers(args.corpus)
    html = [e.html for e in map(extract_html, answers) if e is not None]
    parts["app"] = mean([len(a) for a in answers])
    print(f"\n== applications: {len(answers)} answers of every model in {args.corpus}/eval\n"
          f"answer mean {parts['app']} chars (HTML inside: mean {mean([len(h) for h in html])}); "
          f"p10/median/p90 {sorted(map(len, answers))[len(answers) // 10]}/{statistics.median(map(len, answers)):.0f}/"
          f"{sorted(map(len, answers))[9 * len(answers) // 10]}")

    from schemas.config.env import EnvConfig
    from tasks.env.score import ScoreInput, score_batch

    step = max(1, len(answers) // args.apps)
    sample = answers[::step][: args.apps]
    judge = Replay({})
    score_batch([ScoreInput(f"a{i}", task, a) for i, a in enumerate(sample)], provider=judge, cfg=EnvConfig())
    jv = [r.variables for r, _x, _y in judge.calls]
    parts["rubric"] = len(jv[0]["rubric"])
    parts["evidence"] = mean([len(v["observed"]) + len(v["check_results"]) for v in jv])
    print(f"\n== judge: {len(jv)} of {len(sample)} sampled apps judged under q5 ({items} items) with browser evidence\n"
          f"instructions {instructions('judge')} chars; compact rubric {parts['rubric']}; observed + check results "
          f"mean {parts['evidence']} (min {min(len(v['observed']) + len(v['check_results']) for v in jv)}, max "
          f"{max(len(v['observed']) + len(v['check_results']) for v in jv)})")

    g2 = json.loads(G2.read_text())
    finding = len(json.dumps(g2["rubric_alignment"]["major"][0]))
    skeleton = len(json.dumps({k: {"name": k, "critical": [], "major": [], "minor": []} for k in LAYERS}))
    share, n_apps = unmet_share(args.corpus)
    parts["diagnosis"] = round(skeleton + share * items * finding)
    print(f"\n== judge reply: {skeleton} chars of layers + the G.2 finding ({finding} chars) for each unmet item:\n"
          f"{share:.2f} of {items} items (mean share of PFT tests failed, {n_apps} apps of "
          f"{', '.join(interactscience.LABELLED_MODELS)})")

    print("\n== cost.* in tokens (characters above / chars_per_token)")
    for k, v in parts.items():
        print(f"  cost.{k:<15} {tok(v):>6}   ({v:,} chars)")


if __name__ == "__main__":
    main()
