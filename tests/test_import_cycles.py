"""No import circles between the project's modules, counting every import in a file: top-level,
inside functions and under ``TYPE_CHECKING`` (a circle hidden there is still a circle in the design);
and the dependencies point one way (``ALLOWED``).

Static (the AST of each file), so it needs no imports and takes well under a second."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("flows", "rubricrl", "schemas", "tasks", "training")
# Outside the product: the fakes both tests and benches run on, the benches, the tests.
SUPPORT = ("fakes", "bench", "tests")
# What each package may import of ours (the layering of DESIGN.md): schemas nothing else; tasks (the
# environment) no orchestrator and no trainer; the trainer reaches the score-step flow by its path
# (train.run.score_fn), never by an import; flows start training jobs and read training's helpers;
# only the CLI package imports the CLI package. No product package imports the fakes, benches or tests;
# the fakes import no bench or test, and a bench no test (what both need lives in fakes/).
ALLOWED = {"schemas": {"schemas"}, "tasks": {"schemas", "tasks"}, "training": {"schemas", "tasks", "training"},
           "flows": {"schemas", "tasks", "training", "flows"}, "rubricrl": set(PACKAGES),
           "fakes": {*PACKAGES, "fakes"}, "bench": {*PACKAGES, "fakes", "bench"}, "tests": {*PACKAGES, *SUPPORT}}


def project_modules(root: Path = REPO, packages: tuple[str, ...] = PACKAGES + SUPPORT) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its file (``from a import b``: a.b if it is a module)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = name.split(".") if is_package else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for t in targets:
            while t and t not in modules:  # import a.b.c of a non-module attribute: its module
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import against ``ALLOWED``, as ``module -> imported``."""
    return sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                  if t.split(".")[0] not in ALLOWED[m.split(".")[0]])


def test_no_import_cycles_between_project_modules():
    modules = project_modules()
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    found = cycles(graph)
    assert not found, "import circles (break each by moving what both sides need into a third module):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_the_checker_sees_a_circle_hidden_in_a_function(tmp_path):
    """Twin check of the checker itself: a circle through an in-function import is found, a chain is not."""
    pkg = tmp_path / "tasks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tasks.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from tasks import a\n")
    (pkg / "c.py").write_text("from tasks.a import f\n")
    modules = {m: p for m, p in project_modules(tmp_path).items()}
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert cycles(graph) == [["tasks.a", "tasks.b"]]
    (pkg / "b.py").write_text("def f():\n    pass\n")
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert cycles(graph) == []


def test_dependencies_point_one_way():
    modules = project_modules()
    found = upward_imports({m: imports_of(m, p, modules) for m, p in modules.items()})
    assert not found, "imports against the layering (move what both need down, into tasks/ or schemas/):\n" + \
        "\n".join(found)


def test_the_direction_check_sees_an_upward_import(tmp_path):
    """Twin check: the environment importing the trainer is found (even inside a function); importing schemas is not."""
    for pkg in ("tasks", "training", "schemas"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "schemas" / "s.py").write_text("")
    (tmp_path / "training" / "grpo.py").write_text("from schemas import s\n")
    (tmp_path / "tasks" / "score.py").write_text("from schemas import s\n\ndef f():\n    from training import grpo\n")
    modules = project_modules(tmp_path)
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert upward_imports(graph) == ["tasks.score -> training.grpo"]
    (tmp_path / "tasks" / "score.py").write_text("from schemas import s\n")
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert upward_imports(graph) == []


def test_the_direction_check_sees_the_product_or_a_bench_reaching_past_the_fakes(tmp_path):
    """Twin check: the product importing the fakes, and a bench importing a test, are found; a bench and a test
    importing the fakes, and the fakes importing the product, are not."""
    for pkg in ("tasks", "fakes", "bench", "tests"):
        (tmp_path / pkg).mkdir()
    (tmp_path / "tasks" / "llm.py").write_text("def f():\n    from fakes import fake_api\n")
    (tmp_path / "fakes" / "fake_api.py").write_text("from tasks import llm\n")
    (tmp_path / "bench" / "bench_llm.py").write_text("from fakes.fake_api import f\nfrom tests import helpers\n")
    (tmp_path / "tests" / "helpers.py").write_text("")
    (tmp_path / "tests" / "test_llm.py").write_text("from fakes import fake_api\nfrom tests import helpers\n")
    modules = project_modules(tmp_path)
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert upward_imports(graph) == ["bench.bench_llm -> tests.helpers", "tasks.llm -> fakes.fake_api"]
    (tmp_path / "tasks" / "llm.py").write_text("def f():\n    pass\n")
    (tmp_path / "bench" / "bench_llm.py").write_text("from fakes.fake_api import f\n")
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    assert upward_imports(graph) == []
