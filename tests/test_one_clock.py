"""Every wait of an app's session goes through the one clock (tasks/env/pagetime.py): a wall-clock sleep anywhere
else in the environment's core is a bug this test finds (issue: "a wall-clock sleep in this code is a bug that a
test finds"). The waits of page time, a hard limit's deadline and the fallback's own clock all live in pagetime.py."""
from __future__ import annotations

import ast
from pathlib import Path

ENV = Path(__file__).resolve().parent.parent / "tasks" / "env"
WAITS = {"sleep", "wait_for_timeout"}  # asyncio.sleep, time.sleep, Playwright's page.wait_for_timeout
# Where a wall-clock wait is the point, with why
ALLOWED = {
    "pagetime.py": "the clock itself: page time, the hard limit's wall deadline, the fallback's own clock",
    "mirror_serve.py": "the CDN mirror's server process: it waits for its browser to exit, never for a page",
}


def wall_waits(source: str) -> list[int]:
    """Lines of ``source`` that call a wait by name (``x.sleep(...)``, ``sleep(...)``, ``x.wait_for_timeout(...)``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in WAITS:
                lines.append(node.lineno)
    return sorted(lines)


def test_no_module_of_the_environment_waits_on_the_wall_clock_but_the_clock():
    found = {p.name: n for p in sorted(ENV.glob("*.py")) if p.name not in ALLOWED and (n := wall_waits(p.read_text()))}
    assert found == {}, f"wall-clock waits outside tasks/env/pagetime.py (wait through PageTime / let_pass): {found}"


def test_the_rule_sees_each_kind_of_wait():
    src = ("import asyncio, time\nasync def f(page):\n    await asyncio.sleep(1)\n    time.sleep(1)\n"
           "    await page.wait_for_timeout(5)\n    await asyncio.wait_for(g(), 1)\n")
    assert wall_waits(src) == [3, 4, 5]
