"""Query synthesis (paper D.1): capability sets x personas -> web-app requests.

Each candidate ``i`` is drawn from its own seeded generator, so any chunk of candidates can be made
(or re-made after a crash) independently and always comes out the same. Functional content (a
capability set from one to three of the 12 categories) is chosen separately from the application
context (domain, subject, persona); the LLM (or the offline rule) writes the request from both.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.contracts.queries import DIFFICULTIES, DOMAINS, QUERY_CANDIDATES_SCHEMA, QueryDraft
from schemas.taxonomy import PersonaAttributes, Taxonomy
from tasks.llm.base import LLMRequest, Provider

DATA_DIR = Path(__file__).resolve().parent.parent / "data"  # tasks/data: the taxonomy and persona tables
PROMPT = "synthesize_query"
STAGE = "query_candidates"


@lru_cache(maxsize=None)
def load_taxonomy(path: Path = DATA_DIR / "taxonomy.json") -> Taxonomy:
    return Taxonomy.model_validate_json(path.read_text())


@lru_cache(maxsize=None)
def load_persona_attributes(path: Path = DATA_DIR / "personas.json") -> PersonaAttributes:
    return PersonaAttributes.model_validate_json(path.read_text())


@lru_cache(maxsize=None)
def load_subjects(path: Path = DATA_DIR / "subjects.json") -> dict[str, list[list[str]]]:
    data = json.loads(path.read_text())
    if sorted(data) != sorted(DOMAINS):
        raise ValueError(f"{path}: domains must be exactly {DOMAINS}; found {sorted(data)}")
    return data


@dataclass(frozen=True)
class Persona:
    persona_id: str
    occupation: str
    expertise: str
    motivation: str
    usage_environment: str


def sample_personas(n: int, seed: int) -> list[Persona]:
    attrs = load_persona_attributes()
    out = []
    for i in range(n):
        rng = random.Random(f"persona:{seed}:{i}")
        out.append(Persona(f"p{i:05d}", rng.choice(attrs.occupation), rng.choice(attrs.expertise),
                           rng.choice(attrs.motivation), rng.choice(attrs.usage_environment)))
    return out


@dataclass(frozen=True)
class CandidateSpec:
    index: int
    domain: str
    subject: list[str]  # [title, objects, object, parameter]
    capability_ids: list[str]
    category_ids: list[str]
    persona: Persona
    difficulty: str


def candidate_spec(index: int, seed: int, personas: list[Persona], min_caps: int, max_caps: int) -> CandidateSpec:
    tax, subjects = load_taxonomy(), load_subjects()
    rng = random.Random(f"query:{seed}:{index}")
    domain = rng.choice(DOMAINS)
    subject = rng.choice(subjects[domain])
    n_caps = rng.randint(min_caps, max_caps)
    n_cats = min(len(tax.categories), rng.randint(1, min(3, n_caps)))
    cats = rng.sample(tax.categories, n_cats)
    pool = [k.id for c in cats for k in c.capabilities]
    caps = [cats[j % n_cats].capabilities for j in range(n_cats)]
    chosen = [rng.choice(c).id for c in caps]  # every chosen category contributes
    rest = [k for k in pool if k not in chosen]
    chosen += rng.sample(rest, min(len(rest), n_caps - len(chosen)))
    span = max(1, max_caps - min_caps + 1)
    level = min(len(DIFFICULTIES) - 1, (n_caps - min_caps) * len(DIFFICULTIES) // span)
    cat_of = tax.category_of()
    return CandidateSpec(index, domain, subject, chosen, sorted({cat_of[c] for c in chosen}),
                         rng.choice(personas), DIFFICULTIES[level])


def prompt_variables(spec: CandidateSpec) -> dict[str, Any]:
    tax = load_taxonomy()
    cap = tax.capability()
    title, objs, obj, param = spec.subject
    return {
        "domain": spec.domain, "title": title, "objects": objs, "object": obj, "parameter": param,
        "difficulty": spec.difficulty,
        "capabilities": "\n".join(f"- {c}: {cap[c].phrase.format(obj=objs, obj_one=obj, param=param)}"
                                  for c in spec.capability_ids),
        "persona": (f"{_a(spec.persona.occupation)} who is {spec.persona.expertise}, "
                    f"{spec.persona.motivation}, and will use the app {spec.persona.usage_environment}"),
        "occupation": spec.persona.occupation, "expertise": spec.persona.expertise,
        "motivation": spec.persona.motivation, "usage_environment": spec.persona.usage_environment,
        "seed_index": spec.index,
    }


# The closing sentence of an offline request, named: the rubric rules say of each whether a check can decide it
# (``tasks/rubrics/capabilities.py``).
SIMPLE_CLOSER, ONE_SCREEN_CLOSER = "Keep the interface simple and uncluttered.", "A single screen is enough."
HELP_TEXT_CLOSER = "Explain the rules in a short help text that a 'Help' button shows and hides."
GROUPED_CLOSER = "Keep all related controls grouped together."
EDGE_CASES_CLOSER = "Handle edge cases such as empty input and repeated actions."
IMMEDIATE_CLOSER = "Make sure every state change is reflected on screen immediately."
_DIFFICULTY_CLOSERS = {"easy": [SIMPLE_CLOSER, ONE_SCREEN_CLOSER], "medium": [HELP_TEXT_CLOSER, GROUPED_CLOSER],
                       "hard": [EDGE_CASES_CLOSER, IMMEDIATE_CLOSER]}
_OPENERS = ["Build", "Create", "Make", "Design", "Develop"]
_CONNECTORS = ["It must", "The app should", "Requirements: it should", "Please make sure it can"]


def _a(phrase: str) -> str:
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def offline_query(v: dict[str, Any]) -> dict[str, Any]:
    """Deterministic request text from the variables (no model): rules and templates only."""
    rng = random.Random(f"offline-text:{v['seed_index']}")
    caps = [line.split(": ", 1)[1] for line in v["capabilities"].splitlines()]
    body = "; ".join(caps[:-1]) + (f"; and {caps[-1]}" if len(caps) > 1 else caps[-1])
    text = (f"{rng.choice(_OPENERS)} {_a(v['title'])} miniapp for {v['persona']}. "
            f"{rng.choice(_CONNECTORS)} {body}. {rng.choice(_DIFFICULTY_CLOSERS[v['difficulty']])}")
    return {"title": v["title"], "query": text}


def synthesize_chunk(indices: list[int], seed: int, personas: list[Persona], min_caps: int, max_caps: int,
                     provider: Provider, concurrency: int = 8) -> pa.Table:
    """Make candidates for ``indices``: a failed LLM answer is kept as a row with ``error`` set."""
    specs = [candidate_spec(i, seed, personas, min_caps, max_caps) for i in indices]
    reqs = [LLMRequest(stage=STAGE, key=f"q{s.index:06d}", prompt=PROMPT, variables=prompt_variables(s),
                       output_model=QueryDraft, offline_rule=offline_query, max_tokens=1024, temperature=1.0)
            for s in specs]
    results = provider.complete_bulk(reqs, concurrency=concurrency)
    version = reqs[0].template.version if reqs else ""
    rows = []
    for s, r in zip(specs, results):
        out: QueryDraft | None = r.output  # type: ignore[assignment]
        rows.append({
            "query_id": f"q{s.index:06d}", "text": out.query if out else None, "title": out.title if out else None,
            "capability_ids": s.capability_ids, "category_ids": s.category_ids, "persona_id": s.persona.persona_id,
            "domain": s.domain, "difficulty": s.difficulty, "source": "synthesized", "provider": r.provider,
            "model": r.model, "prompt_version": version, "candidate_index": s.index, "error": r.error,
        })
    return pa.Table.from_pylist(rows, schema=QUERY_CANDIDATES_SCHEMA)


def load_prompt_fingerprint() -> str:
    from tasks.llm.prompts import load_prompt

    return load_prompt(PROMPT).fingerprint
