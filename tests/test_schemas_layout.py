"""``schemas/`` is grouped by kind and every name in it has one owner: no two modules side by side whose names
differ only by a plural or an affix (``rubric.py`` / ``rubrics.py`` / ``rubric_outputs.py``, ``env.py`` /
``config_env.py``), no class and no stage contract (``*_SCHEMA``, ``*_suites``) defined twice, one base of the
configuration sections, and the stage contracts and the scorer load without great_expectations.

Static (the AST of each file) but for the last test, which imports in a fresh interpreter."""
from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"
CONTRACT_SUFFIXES = ("_SCHEMA", "_suites")


def _words(stem: str) -> tuple[str, ...]:
    """A module name as words, each without a plural s (``rubric_outputs`` -> ``rubric``, ``output``)."""
    return tuple(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in stem.split("_"))


def near_homonyms(folder: Path) -> list[tuple[str, str]]:
    """Pairs of modules or packages in ``folder`` whose names are the same word(s) up to plurals, or one is the
    other with a word more before or after (``llm`` / ``llm_schema``, ``env`` / ``config_env``)."""
    names = sorted({p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
                   | {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()})
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            wa, wb = _words(a), _words(b)
            short, long_ = sorted((wa, wb), key=len)
            if wa == wb or (len(long_) > len(short) and short in (long_[:len(short)], long_[-len(short):])):
                out.append((a, b))
    return out


def _folders(root: Path) -> list[Path]:
    return [root, *sorted(p.parent for p in root.rglob("__init__.py") if p.parent != root)]


def definitions(root: Path) -> dict[str, list[str]]:
    """Top-level classes, functions and constants of every module under ``root`` -> the modules defining them."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        where = str(path.relative_to(root.parent))
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                out[node.name].append(where)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id].append(where)
    return out


def class_names(root: Path) -> set[str]:
    return {n.name for p in root.rglob("*.py") for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(n, ast.ClassDef)}


def test_no_near_homonyms_side_by_side():
    found = {str(f.relative_to(REPO)): pairs for f in _folders(SCHEMAS) if (pairs := near_homonyms(f))}
    assert not found, f"modules whose names differ only by a plural or an affix (name each for what it holds): {found}"


def test_no_class_or_stage_contract_defined_twice():
    classes = class_names(SCHEMAS)
    twice = {name: where for name, where in definitions(SCHEMAS).items() if len(where) > 1
             and (name in classes or name.endswith(CONTRACT_SUFFIXES))}
    assert not twice, f"defined in more than one schemas module (one owner, one name): {twice}"


def test_one_base_for_every_configuration_section():
    """The sections share one base, so what a section forbids (unknown keys) and checks (assignments) is set once."""
    config = SCHEMAS / "config"
    assert config.is_dir(), "the configuration is not grouped: no schemas/config/ package"
    bases = [f"{p.relative_to(REPO)}:{n.name}" for p in SCHEMAS.rglob("*.py")
             for n in ast.parse(p.read_text(encoding="utf-8")).body
             if isinstance(n, ast.ClassDef) and n.name in ("Section", "_Section")]
    assert bases == ["schemas/config/base.py:Section"], f"one base of the sections, in schemas/config/base.py: {bases}"
    plain = [f"{p.relative_to(REPO)}:{n.name}" for p in sorted(config.glob("*.py")) if p.name != "base.py"
             for n in ast.parse(p.read_text(encoding="utf-8")).body
             if isinstance(n, ast.ClassDef) and "BaseModel" in [getattr(b, "id", None) for b in n.bases]]
    assert not plain, f"configuration models not derived from schemas.config.base.Section: {plain}"


def test_the_stage_schemas_and_the_scorer_load_without_great_expectations():
    """Every stage contract, and the scorer that ``rubricrl score``, the reward service and the training jobs import,
    load without GX: it costs about 5 s of CPU and ~280 MB per process, and only a stage's validation needs it."""
    mods = sorted(f"schemas.contracts.{p.stem}" for p in (REPO / "schemas" / "contracts").glob("*.py")
                  if p.stem != "__init__") + \
        ["tasks.env.score", "rubricrl.score_cmd"]
    code = f"import sys; [__import__(m) for m in {mods!r}]; sys.exit('great_expectations' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, f"importing {mods} imports great_expectations: {res.stderr[-2000:]}"


def test_the_rules_find_what_they_look_for(tmp_path):
    """Twin check: the old layout's names are found, distinct names side by side are not."""
    for name in ("rubric.py", "rubrics.py", "rubric_outputs.py", "env.py", "config_env.py", "checks.py",
                 "check_results.py", "layout.py", "taxonomy.py"):
        (tmp_path / name).write_text("class A:\n    pass\n" if name == "rubric.py" else "")
    (tmp_path / "llm").mkdir()
    (tmp_path / "llm" / "__init__.py").write_text("")
    (tmp_path / "llm_schema.py").write_text("class A:\n    pass\nX_SCHEMA = 1\n")
    assert sorted(near_homonyms(tmp_path)) == [
        ("check_results", "checks"), ("config_env", "env"), ("llm", "llm_schema"), ("rubric", "rubric_outputs"),
        ("rubric", "rubrics"), ("rubric_outputs", "rubrics")]
    defs = definitions(tmp_path)
    assert defs["A"] == [f"{tmp_path.name}/llm_schema.py", f"{tmp_path.name}/rubric.py"]
    assert defs["X_SCHEMA"] == [f"{tmp_path.name}/llm_schema.py"]
