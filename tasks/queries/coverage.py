"""Coverage report of the queries stage: counts by category, capability, domain, difficulty and
persona attributes, as markdown and a PNG plot."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa

from tasks.queries.synthesize import Persona


def coverage_counts(queries: pa.Table, personas: list[Persona]) -> dict[str, Counter]:
    by_id = {p.persona_id: p for p in personas}
    rows = queries.select(["category_ids", "capability_ids", "domain", "difficulty", "persona_id"]).to_pylist()
    out: dict[str, Counter] = {k: Counter() for k in
                               ("category", "capability", "domain", "difficulty", "occupation", "expertise",
                                "motivation", "usage_environment")}
    for r in rows:
        out["category"].update(r["category_ids"] or [])
        out["capability"].update(r["capability_ids"] or [])
        out["domain"][r["domain"] or "(external)"] += 1
        out["difficulty"][r["difficulty"] or "(external)"] += 1
        p = by_id.get(r["persona_id"] or "")
        if p:
            for attr in ("occupation", "expertise", "motivation", "usage_environment"):
                out[attr][getattr(p, attr)] += 1
    return out


def coverage_markdown(counts: dict[str, Counter], top: int = 12) -> str:
    parts = ["# Query coverage"]
    for name, c in counts.items():
        total = sum(c.values())
        parts.append(f"\n## {name} ({len(c)} distinct, {total} total)\n\n| value | count |\n|---|---|")
        parts += [f"| {k} | {v} |" for k, v in c.most_common(top)]
        if len(c) > top:
            parts.append(f"| … {len(c) - top} more | |")
    return "\n".join(parts)


def coverage_plot(counts: dict[str, Counter], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = ["category", "domain", "difficulty", "expertise"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    for ax, name in zip(axes.flat, panels):
        items = sorted(counts[name].items(), key=lambda kv: -kv[1])
        ax.barh([k for k, _ in items][::-1], [v for _, v in items][::-1], color="#4c72b0")
        ax.set_title(f"queries by {name}")
        ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
