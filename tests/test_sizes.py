"""Modules stay focused and functions short in the product packages (pure: reads the source): a module of
more than ``MODULE_LINES`` lines or a function of more than ``FUNCTION_LINES`` is a sign it does two things.
Benches and tests are scripts and fixtures, not held to it."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("tasks", "flows", "training", "rubricrl", "schemas")
MODULE_LINES = 450  # "about 400": room for a docstring that explains the module
FUNCTION_LINES = 60


def sources() -> list[Path]:
    return sorted(p for pkg in PRODUCT for p in (ROOT / pkg).rglob("*.py"))


def long_functions(text: str, limit: int) -> list[tuple[str, int]]:
    """(name, lines) of every function or method longer than ``limit`` lines, decorators excluded."""
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > limit]


def test_no_product_module_is_over_its_line_budget():
    over = {str(p.relative_to(ROOT)): n for p in sources() if (n := len(p.read_text().splitlines())) > MODULE_LINES}
    assert over == {}


def test_no_product_function_is_over_its_line_budget():
    over = {f"{p.relative_to(ROOT)}:{name}": n for p in sources() for name, n in long_functions(p.read_text(),
                                                                                              FUNCTION_LINES)}
    assert over == {}


def test_the_function_budget_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    assert long_functions(f"def short():\n    pass\n\n\ndef long():\n{body}\n", FUNCTION_LINES) == \
        [("long", FUNCTION_LINES + 1)]
