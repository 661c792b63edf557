"""Mutation bench of the interaction probe; prints figures, asserts nothing.

Interaction-only faults are injected automatically into the project's own correct apps (the offline
teacher's answers, the env fixtures and their correct twins, the ~30 KB app of ``bench_env``), and each
mutant goes through the browser check with the probe on:

Only mutants the unmutated app can reach count: its probe saw a listener of the mutated event type.

- ``throw``: a handler throws when its event arrives (the first statement of a block-bodied handler, or
  the whole handler when it is a reference or an expression). Detected: an interaction failure.
  Goal: >= 90% detected.
- ``no_input``: a click handler is registered for an event that never comes (``click`` -> ``clicq``).
  Detected: more dead controls than the unmutated app has (rubric evidence, never a runtime failure).
- ``anim_stops``: the animation loop stops after its first frame. Detected: the unmutated app is
  animated while idle and the mutant is not (rubric evidence).

False alarms: unmutated apps with any interaction failure (goal: none), and, for information, unmutated
apps reported with dead controls or runtime-invalid.

Run: ``python bench/bench_mutation.py [--max-per-app 4] [--concurrency 0]``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script by `make bench`: the project (and bench.bench_env) importable
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident
FIX = REPO / "tests" / "fixtures" / "env"
FAULT = "throw new Error('injected fault');"
_LISTEN = re.compile(r"addEventListener\(\s*(['\"])(click|keydown|keyup|input|change|submit|pointerdown|mousedown|"
                     r"mousemove|pointermove)\1\s*,\s*")
_ATTR = re.compile(r"\bon(click|input|change|keydown|submit)\s*=\s*(\"|')")
_RAF = re.compile(r"requestAnimationFrame\(\s*(\w+)\s*\)")


def _arg_end(src: str, i: int) -> int:
    """End of the call argument starting at ``i``: the next top-level ``,`` or ``)`` (strings skipped)."""
    depth, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "'\"`":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return n


def throw_mutants(html: str) -> list[tuple[str, str]]:
    """One mutant per handler site: (site description, mutated html)."""
    out = []
    for m in _LISTEN.finditer(html):
        s = m.end()
        e = _arg_end(html, s)
        arg = html[s:e]
        body = re.match(r"\s*(?:async\s+)?(?:function\s*\w*\s*\([^)]*\)|\([^)]*\)\s*=>|\w+\s*=>)\s*\{", arg)
        if body:
            mutated = html[: s + body.end()] + " " + FAULT + html[s + body.end():]
        else:
            mutated = html[:s] + f"(() => {{ {FAULT} }})" + html[e:]
        out.append((f"{m.group(2)} listener at {s}", mutated))
    for m in _ATTR.finditer(html):
        out.append((f"on{m.group(1)} attribute at {m.start()}", html[: m.end()] + FAULT + " " + html[m.end():]))
    return out


def no_input_mutants(html: str) -> list[tuple[str, str]]:
    return [(f"click listener at {m.start()}", html[: m.start(2)] + "clicq" + html[m.end(2):])
            for m in _LISTEN.finditer(html) if m.group(2) == "click"]


def anim_mutants(html: str) -> list[tuple[str, str]]:
    """The loop's own rescheduling (a ``requestAnimationFrame(f)`` inside ``function f``) runs once only;
    the first call that starts a loop is left alone (stopping it there would leave the loop running)."""
    out = []
    for m in _RAF.finditer(html):
        decl = re.search(r"function\s+" + re.escape(m.group(1)) + r"\s*\([^)]*\)\s*\{", html)
        if not decl or not decl.end() <= m.start() < _arg_end(html, decl.end()):
            continue
        guard = f"((window.__faultFrames = (window.__faultFrames || 0) + 1) < 2 && requestAnimationFrame({m.group(1)}))"
        out.append((f"animation loop at {m.start()}", html[: m.start()] + guard + html[m.end():]))
    return out


def corpus() -> dict[str, str]:
    """The project's own correct apps."""
    from bench.bench_env import make_app
    from schemas.rubric import Task
    from tasks.env.extract import extract_html
    from tasks.sft.teacher import offline_app

    apps: dict[str, str] = {}
    tasks = [Task.model_validate_json((FIX / "task_counter.json").read_text())]
    tasks += [Task.model_validate(v) for v in json.loads((FIX / "interaction" / "tasks.json").read_text()).values()]
    for t in tasks:
        apps[f"teacher:{t.query_id}"] = offline_app(t)
    for name in ("clean.txt", "network.txt"):
        apps[f"fixture:{name}"] = extract_html((FIX / name).read_text()).html
    for name in ("chart_cdn.html", "three_cdn.html", "three_r128_cdnjs.html"):
        apps[f"fixture:{name}"] = (FIX / name).read_text()
    for name in ("quiz_ok.txt", "key_ok.html", "button_wired.html", "anim_runs.html", "form_prevented.html"):
        text = (FIX / "interaction" / name).read_text()
        apps[f"twin:{name}"] = extract_html(text).html if name.endswith(".txt") else text
    apps["bench_env:make_app(0)"] = make_app(0)
    return apps


def _spread(items: list, k: int) -> list:
    """At most k items spread over the list (the first, the last, evenly between)."""
    if len(items) <= k:
        return items
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)] if k > 1 else items[:1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-per-app", type=int, default=4, help="mutants per app and fault kind, at most")
    ap.add_argument("--concurrency", type=int, default=0, help="browser checks at once (0: env.runtime default)")
    args = ap.parse_args()
    from schemas.config.env import RuntimeConfig
    from tasks.env.probe import interaction_failures
    from tasks.env.runtime import BrowserRuntime

    apps = corpus()
    jobs: list[tuple[str, str, str, str]] = [(name, "none", "", html) for name, html in apps.items()]
    for name, html in apps.items():
        for kind, fn in (("throw", throw_mutants), ("no_input", no_input_mutants), ("anim_stops", anim_mutants)):
            jobs += [(name, kind, site, m) for site, m in _spread(fn(html), args.max_per_app)]
    cfg = RuntimeConfig(concurrency=args.concurrency) if args.concurrency else RuntimeConfig()
    t0 = time.perf_counter()
    with BrowserRuntime(cfg) as rt:
        evs = rt.check_many([j[3] for j in jobs])
    wall = time.perf_counter() - t0
    base = {j[0]: ev for j, ev in zip(jobs, evs) if j[1] == "none"}
    dead = lambda ev: len(ev.interaction.dead_controls if ev.interaction else [])  # noqa: E731
    animated = lambda ev: bool(ev.interaction and ev.interaction.liveness and ev.interaction.liveness.animated)  # noqa: E731
    per_kind: dict[str, dict] = {}
    missed, unreachable = [], 0
    for (name, kind, site, _), ev in zip(jobs, evs):
        if kind == "none":
            continue
        b = base[name]
        seen = {x.type for x in (b.interaction.listeners if b.interaction else [])}
        event = site.split()[0].removeprefix("on")
        if kind != "anim_stops" and event not in seen:
            unreachable += 1  # the handler is never registered (no element to bind): no fault to find
            continue
        if kind == "throw":
            hit = bool(interaction_failures(ev.interaction)) or ev.status == "page_error"
        elif kind == "no_input":
            hit = dead(ev) > dead(b)
        else:
            if not animated(b):
                unreachable += 1  # the unmutated app does not animate while idle: nothing to stop
                continue
            hit = not animated(ev)
        k = per_kind.setdefault(kind, {"mutants": 0, "detected": 0})
        k["mutants"] += 1
        k["detected"] += hit
        if not hit:
            missed.append(f"{kind} {name} {site}")
    for k in per_kind.values():
        k["rate"] = round(k["detected"] / k["mutants"], 3) if k["mutants"] else None
    false_alarms = [n for n, ev in base.items() if interaction_failures(ev.interaction)]
    print(json.dumps({"bench": "interaction_mutation", "apps": len(apps), "mutants": len(jobs) - len(apps), "unreachable_mutants": unreachable,
                      "detection": per_kind, "missed": missed[:20],
                      "false_alarms_on_unmutated": false_alarms,
                      "unmutated_invalid": [n for n, ev in base.items() if ev.runtime_valid(cfg) is not True],
                      "unmutated_with_dead_controls": {n: [c.label for c in ev.interaction.dead_controls]
                                                       for n, ev in base.items() if dead(ev)},
                      "wall_s": round(wall, 1), "apps_per_s": round(len(jobs) / wall, 2), "cpus": os.cpu_count(),
                      "load_avg": [round(x, 2) for x in os.getloadavg()],
                      "goal": ">= 90% of throw detected, 0 false alarms"}, indent=1))


if __name__ == "__main__":
    main()
