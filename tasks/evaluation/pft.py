"""Run a benchmark's own Playwright functional tests (PFT) against generated apps, as the benchmark does.

InteractScience tests each app with a spec of its own (``PFT_tests/<id>.spec.js``), run by Node's
``@playwright/test`` against the page the spec opens (``path.resolve(__dirname, '../pages/<id>.html')``).
Here each app gets a folder of the run (``<run>/<app key>/tests/<spec>``) and its page is written where
the spec looks for it, so the spec's text runs unchanged. What differs from the benchmark's own run:

- the runner is ``vendor/pft``, ``@playwright/test`` pinned to 1.53.0, the version the benchmark's
  published results were run with (a later one passes tests 1.53 fails: ``fill()`` on a range input it
  calls a malformed value), driving Debian's ``chromium-headless-shell`` (not the build 1.53 bundles) with
  the sandbox's launch flags, in an empty network namespace when the machine allows one
  (``tasks/env/runtime.py``), never ``playwright install``;
- the ``@playwright/test`` the spec imports is ``vendor/pft/sandbox`` (linked as the run's
  ``node_modules/@playwright/test``): the real one, whose every context routes requests through the
  sandbox. CDN libraries come from our mirror (``tasks/env/cdn.py``, over ``MirrorServer``); nothing
  leaves the machine; a script the mirror cannot serve is recorded as unserved.

Verdict per test (``verdict_of``): ``passed``; ``failed``; ``no_reference`` when its only errors are
screenshot comparisons whose reference image is absent (the public snapshot ships none): the test cannot
be judged here; ``unserved`` when it failed after the page asked for a library the mirror cannot serve (a CDN
URL, or any script: the benchmark's own run had the network): the environment could not judge it. An app's official score is the share of its judged tests that passed
(None when none could be judged, with the reason).

Run: ``run_pft([PftApp("m0-AdditiveCipher", "AdditiveCipher.spec.js", spec_text, html)], runtime_cfg,
pft_cfg)`` -> ``{key: AppResult}``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from schemas.config.env import PROJECT_ROOT, RuntimeConfig
from schemas.config.evaluation import OfficialConfig
from tasks.env.cdn import configured_mirror
from tasks.env.launch import launch_args, sandbox_launch
from tasks.evaluation.mirror_server import MirrorServer
from tasks.evaluation.playwright_report import TestOutcome, spec_outcomes

# The page a spec opens, relative to the spec's own folder (every InteractScience spec opens it this way).
PAGE_PATH = re.compile(r"""resolve\(\s*__dirname\s*,\s*(['"])([^'"]+?\.html?)\1\s*\)""")
NO_REFERENCE = "A snapshot doesn't exist at"  # Playwright's error when a screenshot test has no reference image
VERDICTS = ("passed", "failed", "no_reference", "unserved")
PROGRESS_PREFIX = "rubricrl-pft "  # a line of vendor/pft/progress.js on the runner's stdout
OnApp = Callable[[str, int, int], None]  # (app key, its tests run, its tests passed) once its last test ended


@dataclass(frozen=True)
class PftApp:
    key: str  # unique in the run: the app's folder name
    spec_name: str  # the spec's file name, e.g. AdditiveCipher.spec.js
    spec: str  # the spec's source, as the benchmark ships it
    html: str | None  # the page; None: the response has none (the spec's page.goto fails, as in the benchmark)


@dataclass
class AppResult:
    tests: list[TestOutcome] = field(default_factory=list)
    problem: str | None = None  # why no test of this app ran (the environment's failure, not the app's)


def runner_problem(cfg: OfficialConfig) -> str | None:
    """Why the PFT runner cannot start here, with the fix (None: it can)."""
    if shutil.which("node") is None:
        return "node is missing: install Node.js 20+ (apt-get install -y nodejs npm), then scripts/setup-system.sh"
    if not (_root(cfg) / "node_modules" / "@playwright" / "test" / "cli.js").is_file():
        return (f"the PFT runner is not installed at {_root(cfg)}: run `npm ci --prefix vendor/pft --ignore-scripts` "
                "(part of scripts/setup-system.sh and `make setup`), or set evaluation.official.enabled=false")
    return None


def runner_version(cfg: OfficialConfig) -> str | None:
    """The installed ``@playwright/test`` version (None: not installed): it decides outcomes, so results record it."""
    meta = _root(cfg) / "node_modules" / "@playwright" / "test" / "package.json"
    return json.loads(meta.read_text(encoding="utf-8")).get("version") if meta.is_file() else None


def _root(cfg: OfficialConfig) -> Path:
    return cfg.pft_dir if cfg.pft_dir.is_absolute() else PROJECT_ROOT / cfg.pft_dir


def page_path(spec: str) -> str:
    """The page file the spec opens, relative to its folder; ``ValueError`` names the fix when it opens none."""
    found = sorted({m.group(2) for m in PAGE_PATH.finditer(spec)})
    if len(found) != 1:
        raise ValueError(f"the spec opens {'pages ' + ', '.join(found) if found else 'no page'} through "
                         "path.resolve(__dirname, '<page>.html'); rubricrl points one such page at the generated app, "
                         "so write the spec's page.goto that way, once")
    return found[0]


def write_app(run_dir: Path, app: PftApp) -> None:
    """The app's folder: the spec unchanged in ``tests/``, the page where the spec opens it."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", app.key) or not re.fullmatch(r"[A-Za-z0-9_.-]+\.(spec|test)\.[cm]?js",
                                                                            app.spec_name):
        raise ValueError(f"PFT app {app.key!r} / spec {app.spec_name!r}: use letters, digits, '_', '-', '.' only, "
                         "and a spec name ending in .spec.js")
    tests = run_dir / app.key / "tests"
    page = (tests / page_path(app.spec)).resolve()
    if not page.is_relative_to((run_dir / app.key).resolve()):
        raise ValueError(f"the spec {app.spec_name} opens {page_path(app.spec)}, outside its app's folder")
    tests.mkdir(parents=True, exist_ok=True)
    (tests / app.spec_name).write_text(app.spec, encoding="utf-8")
    if app.html is not None:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(app.html, encoding="utf-8")


def run_settings(run_dir: Path, runtime: RuntimeConfig, cfg: OfficialConfig) -> tuple[dict[str, Any], dict[str, str]]:
    """The run's JSON settings (read by vendor/pft/pft.config.js) and the extra environment of the node process."""
    launch = sandbox_launch(runtime)
    settings = {"testDir": str(run_dir), "outputDir": str(run_dir / ".results"), "report": str(run_dir / "report.json"),
                "workers": cfg.pft_workers, "executablePath": launch["executable_path"],
                "args": launch_args(runtime, f"pft-{uuid.uuid4().hex[:8]}")}
    env = {k: v for k, v in (launch.get("env") or {}).items() if k.startswith("RUBRICRL_")}
    return settings, env


def run_pft(apps: list[PftApp], runtime: RuntimeConfig, cfg: OfficialConfig,
            on_app: OnApp | None = None) -> dict[str, AppResult]:
    """Every app's spec, ``cfg.pft_apps_per_run`` apps to a Playwright Test run; app key -> its outcomes (or why
    none). A run that fails costs only its own apps their scores. ``on_app`` hears of each app once, as its last
    test ends (an app none of whose tests ran: when its run ends, with 0 tests)."""
    problem = runner_problem(cfg) if apps else None
    if problem is not None:
        return {a.key: AppResult(problem=problem) for a in apps}
    out: dict[str, AppResult] = {}
    for i in range(0, len(apps), cfg.pft_apps_per_run):
        chunk = apps[i:i + cfg.pft_apps_per_run]
        progress = RunProgress([a.key for a in chunk], on_app)
        out.update(_one_run(chunk, runtime, cfg, progress))
        progress.finish()
    return out


class RunProgress:
    """Which apps of one run have finished, from the runner's progress lines (``vendor/pft/progress.js``: the
    tests of each spec file at the start, then one line per finished test); tells ``on_app`` of each once."""

    def __init__(self, keys: list[str], on_app: OnApp | None) -> None:
        self.keys, self.on_app = set(keys), on_app
        self.total: dict[str, int] = {}
        self.ended: dict[str, list[int]] = {}  # key -> [tests ended, tests passed]
        self.told: set[str] = set()
        self.run_dir = ""

    def _key(self, file: str) -> str | None:
        rel = os.path.relpath(file, self.run_dir) if self.run_dir else file
        key = Path(rel).parts[0] if Path(rel).parts else ""
        return key if key in self.keys else None

    def feed(self, line: str) -> None:
        if not line.startswith(PROGRESS_PREFIX):
            return
        try:
            event = json.loads(line[len(PROGRESS_PREFIX):])
        except ValueError:
            return
        if "begin" in event:
            for file, n in (event.get("begin") or {}).items():
                if (k := self._key(file)) is not None:
                    self.total[k] = self.total.get(k, 0) + int(n)
            return
        k = self._key(str(event.get("file") or ""))
        if k is None or k in self.told:
            return
        done = self.ended.setdefault(k, [0, 0])
        done[0] += 1
        done[1] += bool(event.get("passed"))
        if done[0] >= self.total.get(k, 0):
            self._tell(k)

    def _tell(self, key: str) -> None:
        self.told.add(key)
        if self.on_app is not None:
            ran, passed = self.ended.get(key, [0, 0])
            self.on_app(key, ran, passed)

    def finish(self) -> None:
        """The run ended: the apps not told of yet (their spec did not load, or the run stopped) are told now."""
        for k in sorted(self.keys - self.told):
            self._tell(k)


def _one_run(apps: list[PftApp], runtime: RuntimeConfig, cfg: OfficialConfig,
             progress: RunProgress | None = None) -> dict[str, AppResult]:
    with tempfile.TemporaryDirectory(prefix="rubricrl-pft-") as tmp:
        run_dir = Path(tmp) / "run"
        for app in apps:
            write_app(run_dir, app)
        (run_dir / "node_modules" / "@playwright").mkdir(parents=True)
        (run_dir / "node_modules" / "@playwright" / "test").symlink_to(_root(cfg) / "sandbox", target_is_directory=True)
        settings, extra_env = run_settings(run_dir, runtime, cfg)
        if progress is not None:
            progress.run_dir = str(run_dir)
        (Path(tmp) / "run.json").write_text(json.dumps(settings), encoding="utf-8")
        with MirrorServer(configured_mirror(runtime)) as mirror:
            env = {**os.environ, **extra_env, "RUBRICRL_PFT_RUN": str(Path(tmp) / "run.json"),
                   "RUBRICRL_PFT_MIRROR": mirror.base_url, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}
            failed = _node(cfg, env, run_dir, progress.feed if progress is not None else None)
        report = run_dir / "report.json"
        if not report.is_file():
            return {a.key: AppResult(problem=failed or "the PFT run wrote no report") for a in apps}
        # the run's temporary folder out of the messages: the same apps give the same notes wherever they ran
        text = report.read_text(encoding="utf-8").replace(f"file://{run_dir}/", "").replace(f"{run_dir}/", "")
        return app_results(json.loads(text), [a.key for a in apps])


def _node(cfg: OfficialConfig, env: dict[str, str], run_dir: Path,
          on_line: Callable[[str], None] | None = None) -> str | None:
    """Run Playwright Test; a failure of the run itself as a sentence (failing tests are not one). Each line of
    its stdout goes to ``on_line`` as it comes (the progress reporter's)."""
    cli = _root(cfg) / "node_modules" / "@playwright" / "test" / "cli.js"
    cmd = ["node", str(cli), "test", "--config", str(_root(cfg) / "pft.config.js")]
    # its own process group: past the limit the runner, its workers and their browsers all go
    proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[str] = []
    errs: list[str] = []

    def read_out() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            if on_line is not None and line.startswith(PROGRESS_PREFIX):
                on_line(line)
            else:
                lines.append(line)

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=lambda: errs.append(proc.stderr.read()), daemon=True)]  # type: ignore[union-attr]
    for t in readers:
        t.start()
    try:
        proc.wait(timeout=cfg.pft_run_timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"the Playwright Test run passed evaluation.official.pft_run_timeout_s={cfg.pft_run_timeout_s:g} s"
    finally:
        for t in readers:
            t.join(timeout=10)
    out, err = "".join(lines), "".join(errs)
    if proc.returncode not in (0, 1):  # 1: some test failed, which is a result
        return f"the PFT run failed ({proc.returncode}): {(err or out).strip()[-500:]}"
    return None


def app_results(report: dict[str, Any], keys: list[str]) -> dict[str, AppResult]:
    """The report's outcomes by app key (a spec's file is ``<key>/tests/<spec>``); an app whose spec ran no
    test says why (e.g. the spec does not load: the report's own errors)."""
    by_key: dict[str, list[TestOutcome]] = {}
    for file, tests in spec_outcomes(report).items():
        by_key.setdefault(file.split("/", 1)[0], []).extend(tests)
    errors = "; ".join(str((e or {}).get("message", ""))[:200] for e in report.get("errors") or [])
    return {k: AppResult(by_key[k]) if by_key.get(k) else
            AppResult(problem=f"the spec ran no test{': ' + errors if errors else ''}") for k in keys}


def verdict_of(t: TestOutcome) -> str:
    """One of ``VERDICTS`` for one test (see the module docstring)."""
    if t.passed:
        return "passed"
    if any(kind == "rubricrl-unserved" for kind, _ in t.annotations):
        return "unserved"
    errs = t.errors or ((t.error,) if t.error else ())
    if errs and all(NO_REFERENCE in e for e in errs):
        return "no_reference"
    return "failed"


def app_score(result: AppResult) -> tuple[float | None, list[dict[str, Any]], str | None]:
    """(official score, per-test detail rows, note): the pass share over the judged tests; None with the reason
    when no test could be judged."""
    if result.problem is not None:
        return None, [], result.problem
    detail, judged, passed = [], 0, 0
    for t in result.tests:
        v = verdict_of(t)
        judged += v in ("passed", "failed")
        passed += v == "passed"
        refused = [d for kind, d in t.annotations if kind.startswith("rubricrl-")]
        note = t.error if v != "passed" else None
        if refused:
            note = f"{note or ''}{'; ' if note else ''}sandbox refused {refused[0]}"
        detail.append({"name": t.title, "passed": t.passed if v in ("passed", "failed") else None,
                       "status": v if v != "failed" else t.status, "score": None, "note": note})
    skipped = len(result.tests) - judged
    if not judged:
        return None, detail, f"none of its {len(result.tests)} tests could be judged here (reference screenshots " \
                             "absent, or a CDN library the mirror lacks)"
    note = f"{skipped} of {len(result.tests)} tests not judged (no reference screenshot, or a library the mirror " \
           "lacks)" if skipped else None
    return passed / judged, detail, note
