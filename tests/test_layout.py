"""Every folder and file name ``schemas/layout.py`` owns is read from there: no path in the project's code
is joined with one of them as a literal (``root / "stages"``), so a rename is one edit. Static (the AST of
each file), no imports of the modules scanned."""
from __future__ import annotations

import ast
from pathlib import Path

from schemas import layout
from tests.test_import_cycles import PACKAGES, project_modules

REPO = Path(__file__).resolve().parent.parent
# RUN_CONFIG's "config.json" is also the name of every Hugging Face model's config file: not ours to own
OWNED = {getattr(layout, n) for n in dir(layout) if n.isupper() and isinstance(getattr(layout, n), str)} - {layout.RUN_CONFIG}


def literal_joins(path: Path, root: Path = REPO) -> list[str]:
    """``a / "name"`` and ``"name" / a`` with an owned name, and a module constant holding one (a second
    owner), as ``file:line name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found += [(node.lineno, side.value) for side in (node.left, node.right)
                      if isinstance(side, ast.Constant) and side.value in OWNED]
    found += [(node.lineno, node.value.value) for node in tree.body
              if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in OWNED]
    return [f"{path.relative_to(root)}:{line} {name!r}" for line, name in sorted(found)]


def test_layout_names_are_read_from_schemas_layout():
    files = [p for m, p in project_modules(packages=PACKAGES).items() if m != "schemas.layout"]
    files += sorted((REPO / "bench").glob("*.py"))
    found = [hit for p in files for hit in literal_joins(p)]
    assert not found, "join these paths with the schemas/layout.py constant instead:\n" + "\n".join(found)


def test_the_scan_sees_a_literal_join(tmp_path):
    """Twin check of the scan itself: a literal join is found, the constant is not."""
    bad = tmp_path / "bad.py"
    bad.write_text('from pathlib import Path\nroot = Path("data")\nv = root / "validation"\nSTAGES = "stages"\n')
    good = tmp_path / "good.py"
    good.write_text('from schemas.layout import VALIDATION\nv = root / VALIDATION\nd = {"validation": 1}\n')
    assert literal_joins(bad, tmp_path) == ["bad.py:3 'validation'", "bad.py:4 'stages'"] and literal_joins(good, tmp_path) == []
