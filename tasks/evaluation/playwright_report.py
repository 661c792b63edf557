"""Read a Playwright Test JSON report (``--reporter=json``) into per-spec-file test outcomes (pure).

Public benchmarks publish their functional-test results in this format (InteractScience's
``results/lm_results/PFT_test_results/<model>_component_results.json``), and a run of their specs
with Node's ``@playwright/test`` writes the same. One spec file tests one app, so a file's outcomes
are that app's label: the share of its tests that passed.

Run: ``outcomes = spec_outcomes(json.loads(path.read_text()))``; ``pass_share(outcomes["X.spec.js"])``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colour codes Playwright puts in its error messages


@dataclass(frozen=True)
class TestOutcome:
    __test__ = False  # a record, not a pytest test class
    title: str  # the test's title inside its describe blocks
    passed: bool  # Playwright's own "ok" (expected status reached, retries included)
    status: str  # the last attempt's status: passed | failed | timedOut | skipped | interrupted
    error: str | None  # the last attempt's first error line, if any
    errors: tuple[str, ...] = ()  # the first line of each of the last attempt's errors (soft ones included)
    annotations: tuple[tuple[str, str], ...] = ()  # (type, description) the test recorded about itself


def _first_line(msg: object) -> str | None:
    return ANSI.sub("", msg).strip().splitlines()[0][:300] if isinstance(msg, str) and msg.strip() else None


def _walk(suite: dict[str, Any], file: str, out: dict[str, list[TestOutcome]]) -> None:
    for spec in suite.get("specs") or []:
        results = [r for t in spec.get("tests") or [] for r in t.get("results") or []]
        last = results[-1] if results else {}
        errors = tuple(e for e in (_first_line((x or {}).get("message")) for x in last.get("errors") or []) if e)
        notes = [a for t in spec.get("tests") or [] for a in t.get("annotations") or []] + \
            list(last.get("annotations") or [])
        out.setdefault(spec.get("file") or file, []).append(
            TestOutcome(str(spec.get("title", "")), bool(spec.get("ok")), str(last.get("status", "unknown")),
                        _first_line((last.get("error") or {}).get("message")), errors,
                        tuple(dict.fromkeys((str(a.get("type", "")), str(a.get("description", ""))) for a in notes))))
    for child in suite.get("suites") or []:
        _walk(child, child.get("file") or file, out)


def spec_outcomes(report: dict[str, Any]) -> dict[str, list[TestOutcome]]:
    """spec file name (as the report names it, e.g. ``AdditiveCipher.spec.js``) -> its tests, in order."""
    if not isinstance(report, dict) or not isinstance(report.get("suites"), list):
        raise ValueError("not a Playwright JSON report: expected an object with a 'suites' list "
                         "(write one with `npx playwright test --reporter=json`)")
    out: dict[str, list[TestOutcome]] = {}
    for suite in report["suites"]:
        _walk(suite, suite.get("file") or suite.get("title") or "", out)
    return out


def pass_share(tests: list[TestOutcome]) -> float | None:
    """The share of tests that passed; None for a file with no tests."""
    return sum(t.passed for t in tests) / len(tests) if tests else None


def spec_task_id(file: str) -> str:
    """The task id a spec file tests: ``AdditiveCipher.spec.js`` -> ``AdditiveCipher``."""
    name = file.rsplit("/", 1)[-1]
    for suffix in (".spec.js", ".spec.ts", ".test.js", ".test.ts", ".js", ".ts"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
