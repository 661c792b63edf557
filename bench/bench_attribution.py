"""Benchmark: localisation + expansion + token weights for ~30 KB responses with 3 findings each.

Prints responses per second on ONE core (the process is pinned to one CPU and the tokenizer's
thread pool to one thread). Goal: >= 200. Both wall-clock and CPU (``process_time``) figures are
printed: on a shared, loaded machine the CPU figure is the one that measures this code; the best of
``--repeat`` passes is reported (the first pass also checks that the scoped analysis gives the same
trace as the whole-page analysis, outside the timed region). Each response is a synthetic but realistic single-file app
(prose, CSS, markup, ~100 functions with state, calls and listeners); findings quote code exactly,
with re-flowed whitespace, and as a merged snippet that needs fragments. Token ids come from a
byte-level BPE tokenizer trained here on the same kind of text (no downloads), decoded
incrementally as in training.

Run: ``python bench/bench_attribution.py [--n 60] [--kb 30] [--repeat 3] [--full]`` (``--full``: the
whole-page analysis and the list-of-tuples token offsets, i.e. the pre-scoping path, for comparison).
"""
from __future__ import annotations

import argparse
import os
import random
import time
import _safe  # noqa: E402,F401 - first of our imports: API keys removed, no paid call by accident

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def synthetic_app(seed: int, kb: int) -> tuple[str, int, dict]:
    """(response, html_offset, diagnosis) with three findings quoting real code of the page."""
    rnd = random.Random(seed)
    parts, funcs = [], []
    i = 0
    while sum(map(len, parts)) < kb * 1000 - 2500:
        name = f"update{rnd.choice(['Score', 'Timer', 'Board', 'Panel', 'Hand'])}{i}"
        var = f"count{i % 17}"
        body = (f"function {name}(evt) {{\n  const el = document.getElementById('cell-{i}');\n"
                f"  if (state.level > {i % 5}) {{\n    {var} += {i % 7 + 1};\n    state.total{i % 9}++;\n  }}\n"
                f"  el.textContent = `Value: ${{{var}}} — ✓`; // refresh ♠\n  render{i % 11}({var});\n}}\n"
                f"const render{i} = (v) => {{ panel.innerHTML = '<b>' + v + '</b>'; }};\n"
                f"document.getElementById('btn-{i}').addEventListener('click', {name});\n")
        parts.append(body)
        funcs.append((name, var, body, i))
        i += 1
    decls = "".join(f"let count{k} = 0;\n" for k in range(17))
    state = "const state = { level: 1, " + ", ".join(f"total{k}: 0" for k in range(9)) + " };\n"
    html = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Bench app</title>\n<style>\n"
            + "".join(f".c{k} {{ color: #{k:03x}; margin: {k}px; }}\n" for k in range(40))
            + "</style></head><body>\n" + "".join(f"<button id='btn-{k}'>B{k}</button>\n" for k in range(i))
            + "<script>\n" + decls + state + "".join(parts) + "</script>\n</body></html>\n")
    response = "Here is the app you asked for.\n\n```html\n" + html + "```\nEnjoy!\n"
    picks = rnd.sample(funcs, 3)
    q0 = f"{picks[0][1]} += "
    q0 = picks[0][2][picks[0][2].index(q0):picks[0][2].index("++;", picks[0][2].index(q0)) + 3]
    q1 = " ".join(picks[1][2].split("\n")[3:5])  # re-flowed: needs whitespace-normalised matching
    # merged from two lines the judge glued together: only its fragments are in the page
    q2 = f"function {picks[2][0]}(evt) {{ render{picks[2][3] % 11}({picks[2][1]}); }}"
    findings = [
        {"item_id": f"D{k}", "description": "bench", "code_quotes": [q], "related_symbols": [p[0]],
         "state_variables": [p[1]]} for k, (q, p) in enumerate(zip([q0, q1, q2], picks))
    ]
    diag = {"static_check": {"name": "static_check"}, "code_simulation": {"name": "code_simulation"},
            "rubric_alignment": {"name": "rubric_alignment", "major": findings}}
    return response, response.index("<!DOCTYPE"), diag


def _tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=4000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60, help="responses to time")
    ap.add_argument("--kb", type=int, default=30, help="response size in KB")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes; the best is reported")
    ap.add_argument("--full", action="store_true", help="whole-page analysis (the pre-scoping path)")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from tasks.attribution.api import attribute, token_weights
    from tasks.attribution.tokens import token_offsets, token_offsets_array

    data = [synthetic_app(s, args.kb) for s in range(args.n)]
    tok = _tokenizer([r for r, _, _ in data[:5]])
    ids = [tok.encode(r).ids for r, _, _ in data]  # stand-in for the generated ids
    offsets_of = (lambda i: token_offsets(i, tok)) if args.full else (lambda i: token_offsets_array(i, tok))
    offsets_of(ids[0])  # warm caches (query compilation, byte table)
    attribute(*data[0])
    same = sum(attribute(*d) == attribute(*d, scoped=False) for d in data)  # untimed equivalence check
    best = None
    for _ in range(args.repeat):
        stats = {"direct": 0, "context": 0, "localised_findings": 0, "parsed": 0, "script": 0, "fallback": 0}
        dt = dc = t_attr = c_attr = 0.0  # only the pipeline calls are timed, not the bookkeeping
        for (resp, h, diag), tid in zip(data, ids):
            a, ca = time.perf_counter(), time.process_time()
            trace = attribute(resp, h, diag, scoped=not args.full)
            b, cb = time.perf_counter(), time.process_time()
            w = token_weights(trace, offsets_of(tid), -1.0)
            t_attr, c_attr = t_attr + b - a, c_attr + cb - ca
            dt, dc = dt + time.perf_counter() - a, dc + time.process_time() - ca
            stats["direct"] += int((w == 3.0).sum())
            stats["context"] += int((w == 1.5).sum())
            stats["localised_findings"] += sum(1 for f in trace.findings if f.direct_spans)
            if trace.scope is not None:
                stats["parsed"] += trace.scope.parsed_chars
                stats["script"] += trace.scope.script_chars
                stats["fallback"] += trace.scope.fallback
        run = (dt, dc, t_attr, c_attr, stats)
        best = run if best is None or run[1] < best[1] else best
    dt, dc, t_attr, c_attr, stats = best
    n = len(data)
    print(f"responses: {n} x {sum(len(r) for r, _, _ in data) / n / 1000:.1f} KB, "
          f"{sum(map(len, ids)) / n:.0f} tokens, 3 findings each; path: {'full' if args.full else 'scoped'}")
    print(f"localised findings: {stats['localised_findings']}/{3 * n}; "
          f"direct tokens/resp {stats['direct'] / n:.0f}, context tokens/resp {stats['context'] / n:.0f}; "
          f"scoped trace == full trace: {same}/{n}")
    if stats["script"]:
        print(f"script parsed: {100 * stats['parsed'] / stats['script']:.0f}% (fallbacks to full analysis: "
              f"{stats['fallback']})")
    print(f"attribute (localise + expand): {1000 * t_attr / n:.2f} ms wall, {1000 * c_attr / n:.2f} ms CPU per response")
    print(f"total incl. token alignment + weights: {1000 * dt / n:.2f} ms wall, {1000 * dc / n:.2f} ms CPU per response")
    print(f"throughput: {n / dt:.0f} responses/s/core wall, {n / dc:.0f} responses/s/core CPU (goal >= 200)")


if __name__ == "__main__":
    main()
