"""The README's commands as a newcomer types them, run as processes: `rubricrl ingest FILE.jsonl` (no
--profile), `.venv/bin/duckdb data/catalog.duckdb -c ...` on the catalog it wrote, `rubricrl stages | head -3`
ending quietly, `rubricrl score --provider openai`, build-rubrics keeping the ingested benchmark's given items,
the telemetry setting every entry point reads, SIGTERM to `rubricrl serve` stopping its server and worker,
`rubricrl sql` on a table never published and on a column that does not exist (DuckDB's message, no traceback),
a damaged part named with its rebuild command by every reader, and evaluate's progress on a terminal."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SAMPLE = REPO / "tests" / "fixtures" / "benchmarks" / "webgen_sample.jsonl"
EMPTY = {k: {"name": k, "critical": [], "major": [], "minor": []}
         for k in ("static_check", "code_simulation", "rubric_alignment")}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RUBRICRL_DATA_DIR"}  # `data` below the working directory
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def ingested(prefect_harness, tmp_path_factory):
    """A working directory where `rubricrl ingest FILE.jsonl` ran as the README writes it."""
    from prefect.settings import PREFECT_API_URL

    work = tmp_path_factory.mktemp("newcomer")
    env = _env(PREFECT_API_URL=PREFECT_API_URL.value())
    p = subprocess.run([str(BIN / "rubricrl"), "ingest", str(SAMPLE)], cwd=work, env=env, capture_output=True,
                       text=True, timeout=300)
    return work, env, p


def test_readme_ingest_without_profile(ingested):
    work, _env_, p = ingested
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    from tasks.stages.store import StageStore

    store = StageStore(work / "data")
    assert store.manifest("queries").row_count == 5
    given = store.read("benchmark_queries").column("given_items").to_pylist()
    assert sum(len(g) for g in given) == 12


def test_readme_duckdb_command_reads_the_catalog(ingested):
    work, env, _p = ingested
    p = subprocess.run([str(BIN / "duckdb"), "data/catalog.duckdb", "-c", "select count(*) from queries"], cwd=work,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "│ 5 │" in p.stdout.replace(" ", "").replace("│5│", "│ 5 │")


def test_stages_into_a_closed_pipe_ends_quietly(ingested):
    work, env, _p = ingested
    # the reader is gone before the command writes (as when `head -3` has its lines): deterministic EPIPE
    p = subprocess.Popen([str(BIN / "rubricrl"), "stages"], cwd=work, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0 and b"Error" not in err and b"Traceback" not in err, err.decode()[-2000:]


def _cli(work: Path, env: dict[str, str], *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rubricrl"), *args], cwd=work, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_sql_on_a_stage_never_published_prints_duckdbs_message_and_the_views(ingested):
    work, env, _p = ingested
    p = _cli(work, env, "sql", "select * from check_results")
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert "Table with name check_results does not exist" in p.stderr
    views = next(line for line in p.stderr.splitlines() if line.startswith("views in "))
    assert str(work / "data" / "catalog.duckdb") in views and "queries" in views.split(": ", 1)[1].split(", ")


def test_sql_naming_a_missing_column_prints_duckdbs_message_alone(ingested):
    work, env, _p = ingested
    p = _cli(work, env, "sql", "select no_such_column from queries")
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert 'Referenced column "no_such_column" not found' in p.stderr
    assert "views in" not in p.stderr  # the views answer an unknown table, not this
    ok = _cli(work, env, "sql", "select count(*) as n from queries")  # the twin: a good query still answers
    assert ok.returncode == 0 and ok.stdout.splitlines()[2].strip() == "5", ok.stdout + ok.stderr


def test_a_damaged_part_is_named_with_its_rebuild_by_every_reader(ingested, tmp_path, monkeypatch):
    import shutil

    from tasks.stages.store import CorruptStage, StageStore

    work, env, _p = ingested
    copy = tmp_path / "copy"
    shutil.copytree(work / "data", copy / "data")
    assert _cli(copy, env, "catalog").returncode == 0  # views over the copy's own parts
    store = StageStore(copy / "data")
    part = store.files("queries")[0]
    part.write_bytes(part.read_bytes()[:100])  # truncated
    rebuild = shlex.join(["rubricrl", "run", "--only", "synthesize-queries", "--profile", "demo", "--set",
                          f"synth.ingest_path={SAMPLE}"])

    p = _cli(copy, env, "stages")
    assert p.returncode == 1 and f"part {part} has 100 bytes" in p.stderr and rebuild in p.stderr, p.stderr
    assert '"stage": "benchmark_queries"' in p.stdout and "Traceback" not in p.stderr  # the others still listed
    p = _cli(copy, env, "sql", "select count(*) from queries")
    assert p.returncode != 0 and str(part) in p.stderr and rebuild in p.stderr and "Traceback" not in p.stderr
    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(copy / "data"))
    from flows.build_rubrics import build_rubrics

    with pytest.raises(CorruptStage, match=f"part {re.escape(str(part))} has 100 bytes.*{re.escape(rebuild)}"):
        build_rubrics(profile="demo")  # a downstream flow reads it
    p = subprocess.run(["bash", "-c", f"{BIN}/{rebuild}"], cwd=copy, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert store.faults("queries") == [] and _cli(copy, env, "stages").returncode == 0


def test_build_rubrics_keeps_given_items_and_marks_them(ingested, monkeypatch):
    work, _env_, _p = ingested
    from flows.build_rubrics import build_rubrics
    from tasks.rubrics import load_tasks
    from tasks.stages.store import StageStore

    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(work / "data"))
    build_rubrics(profile="demo")
    store = StageStore(work / "data")
    items = store.read("rubric_items").to_pylist()
    given = [i for i in items if i["given"]]
    assert len(given) == 12 and all(i["source_module"] == "given" and i["scope"] == "dynamic" for i in given)
    tip = [i for i in given if i["query_id"] == "ext-900001"]
    assert [i["requirement"] for i in tip][0] == "Enter 100 as the bill and choose 15%."
    assert tip[0]["verification"] == "The tip shows 15.00 and the total shows 115.00."
    derived = [i for i in items if not i["given"]]
    assert derived and all(i["source_module"] != "given" for i in derived)  # the twins: derived items stay unmarked
    task = next(t for t in load_tasks(store) if t.query_id == "ext-900001")
    assert {i.requirement for i in task.rubric.dynamic} >= {i["requirement"] for i in tip}  # the judge sees them


def test_score_with_the_openai_provider(tmp_path):
    from fakes.fake_openai import FakeOpenAI

    fix = REPO / "tests" / "fixtures" / "env"
    with FakeOpenAI(reply=lambda body: json.dumps(EMPTY)) as api:
        p = subprocess.run([str(BIN / "rubricrl"), "score", "--task", str(fix / "task_counter.json"), "--response",
                            str(fix / "clean.txt"), "--no-browser", "--provider", "openai", "--model", "local",
                            "--base-url", api.base_url + "/v1"], cwd=REPO,
                           env=_env(OPENAI_API_KEY="test-key", RUBRICRL_DATA_DIR=str(tmp_path / "data")),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        assert api.seen("/v1/chat/completions")
    out = json.loads(p.stdout)
    assert out["judge"]["provider"] == "openai" and out["format_valid"] and out["reward"] is not None
    assert (tmp_path / "data" / "llm" / "llm.sqlite").exists()  # the cache lives under the data directory


def test_every_entry_point_in_the_repo_has_telemetry_off():
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_SERVER_ANALYTICS_ENABLED"}
    code = "from prefect.settings import get_current_settings as s; print(s().server.analytics_enabled)"
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "False", p.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not reaped by its parent) is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.timeout(400)
def test_sigterm_to_serve_stops_server_and_worker(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tmp_path / "prefect"
    env = _env(PREFECT_HOME=str(home), PREFECT_API_URL=f"http://127.0.0.1:{port}/api")
    serve = subprocess.Popen([str(BIN / "rubricrl"), "serve", "--port", str(port)], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pidfile = home / "rubricrl-serve.json"
    pids: dict[str, int] = {}
    try:
        # SIGTERM once the server answers (deploying every flow first would add a minute on a loaded machine;
        # server and worker are stopped by the same loop)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and serve.poll() is None:
            pids = json.loads(pidfile.read_text()) if pidfile.exists() else {}
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        assert "server" in pids and serve.poll() is None, "serve did not start a server"
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(_alive(p) for p in pids.values()), pids
        assert not pidfile.exists()
    finally:
        if serve.poll() is None:
            serve.kill()
        for pid in pids.values():
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_evaluate_on_the_ingested_benchmark_reports_its_categories(ingested, monkeypatch, tmp_path):
    work, _env_, _p = ingested
    from flows.build_rubrics import build_rubrics
    from flows.evaluate import evaluate
    from tasks.rubrics import load_tasks
    from tasks.stages.store import StageStore
    from tasks.sft.teacher import offline_teacher_answer

    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(work / "data"))
    build_rubrics(profile="demo")  # current after the test above: no work
    folder = tmp_path / "teacher"
    folder.mkdir()
    for t in load_tasks(StageStore(work / "data")):
        (folder / f"{t.query_id}.txt").write_text(offline_teacher_answer(t))
    out = evaluate(profile="demo", sets=["env.runtime.enabled=false"], models=[str(folder)], benchmark="ingested",
                   runs=1)
    rows = StageStore(work / "data").read("eval_results").to_pylist()
    assert sorted(r["query_id"] for r in rows) == [f"ext-90000{k}" for k in range(1, 6)]
    assert {r["category"] for r in rows} == {"User Interaction", "Data Management", "Content Presentation"}
    assert "pass/category=User Interaction" in out["summary"]["teacher"]
    with pytest.raises(ValueError, match="allowed: heldout, ingested"):
        evaluate(profile="demo", sets=["env.runtime.enabled=false"], models=[str(folder)], benchmark="mine")


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run ``args`` with stdout and stderr on a pseudo-terminal, as a user at a shell sees it."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # a 160-column terminal
    p = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         close_fds=True)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([master], [], [], 1.0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    return p.wait(timeout=30), out.decode(errors="replace")


def test_evaluate_shows_progress_a_bar_on_a_terminal_and_steady_lines(ingested, monkeypatch, tmp_path):
    work, env, _p = ingested
    from flows.build_rubrics import build_rubrics
    from tasks.rubrics import load_tasks
    from tasks.sft.teacher import offline_teacher_answer
    from tasks.stages.store import StageStore

    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(work / "data"))
    build_rubrics(profile="demo")  # current when the tests above ran: no work
    folder = tmp_path / "teacher"
    folder.mkdir()
    tasks = load_tasks(StageStore(work / "data"))
    for t in tasks:
        (folder / f"{t.query_id}.txt").write_text(offline_teacher_answer(t))
    rc, out = _on_a_terminal([str(BIN / "rubricrl"), "run", "--only", "evaluate", "--set",
                              f"evaluation.models={json.dumps([str(folder)])}", "--set", "evaluation.benchmark=ingested",
                              "--set", "evaluation.runs=1", "--set", "evaluation.screenshots=false"], work, env, 400)
    assert rc == 0, out[-3000:]
    n = len(tasks)
    assert f"evaluate teacher: {n} apps to go" in out
    final = re.search(rf"evaluate teacher: {n}/{n} apps scored \(100%\), (\d+) checks run, \S+ elapsed", out)
    assert final and int(final.group(1)) > 0, out[-3000:]  # the items' checks ran in the browser
    frames = re.findall(rf"\revaluate teacher: +(\d+)%\|[^\r\n]*\| (\d)/{n} ", out)  # tqdm's bar, redrawn in place
    assert frames and frames[-1] == ("100", str(n)), out[-3000:]
    # the log lines' rate (not one per app) is proven on a fake clock in tests/test_progress.py
