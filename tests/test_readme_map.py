"""The README's package map is the tree: every package folder is named in its Layout section, and every
folder the map names exists (pure: reads files)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("flows", "tasks", "schemas", "training", "rubricrl", "fakes", "bench", "tests", "docs", "scripts", "vendor")


def layout_section(readme: str) -> str:
    start = readme.index("## Layout")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end > 0 else None]


def clause(text: str, parent: str) -> str:
    """What the map says of ``parent/``: from its name to the next entry (a ``·`` outside parentheses) or the
    paragraph's end."""
    out = []
    for m in re.finditer(rf"`{parent}/` ", text):
        depth, i = 0, m.end()
        while i < len(text) and not (depth == 0 and text[i] == "·") and text[i:i + 2] != "\n\n":
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i])
    return "\n".join(out)


def named_folders(text: str, parent: str) -> set[str]:
    """Folders of ``parent/`` the map names: ``parent/x/`` anywhere, or ``x/`` in what it says of ``parent/``
    (its clause, or a paragraph that begins with it)."""
    own = "\n".join(p for p in text.split("\n\n") if p.startswith(f"`{parent}/`"))  # a paragraph of its own
    said = clause(text, parent) + "\n" + own
    found = set(re.findall(rf"`{parent}/([a-z_]+)/", text)) | set(re.findall(r"`([a-z_]+)/`", said))
    return found - set(TOP)  # the dependency sentences name top-level folders beside it


def package_folders(parent: Path) -> set[str]:
    return {p.name for p in parent.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))
            and (any(p.glob("*.py")) or any(p.glob("*.json")) or any(p.glob("*/*.md")) or any(p.glob("*.md")))}


def test_every_package_folder_is_on_the_map_and_the_map_names_only_real_folders():
    text = layout_section((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [t for t in TOP if f"`{t}/" not in text] == []
    for parent in ("tasks", "schemas", "rubricrl"):
        on_map, in_tree = named_folders(text, parent), package_folders(ROOT / parent)
        assert in_tree - on_map == set(), f"{parent}/: folders the README's Layout does not name"
        assert on_map - in_tree == set(), f"{parent}/: folders the README's Layout names that do not exist"


def test_the_map_reader_sees_a_missing_and_an_invented_folder(tmp_path):
    text = "## Layout\n\n`tasks/` has `env/` and `ghost/`.\n"
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "a.py").write_text("")
    (tmp_path / "rl").mkdir()
    (tmp_path / "rl" / "b.py").write_text("")
    on_map, in_tree = named_folders(layout_section(text), "tasks"), package_folders(tmp_path)
    assert (in_tree - on_map, on_map - in_tree) == ({"rl"}, {"ghost"})
