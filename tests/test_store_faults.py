"""Faults of the disk under the stage store: a disk that fills up in the middle of a build (ENOSPC injected
into the Parquet writer and into DuckDB, so the tests run unprivileged), and two runs on one data directory."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tasks.stages import catalog, files
from tasks.stages.catalog import query, refresh_catalog
from tasks.stages.files import DiskFull
from tasks.stages.lock import DataDirBusy, data_dir_lock
from tasks.stages.stage import StageSpec, run_stage, stage_fingerprint
from tasks.stages.store import StageStore

REPO = Path(__file__).resolve().parent.parent
SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("v", pa.int64())])
SPEC = StageSpec("s", SCHEMA, lambda: [])
KEYS = [f"c{i}" for i in range(5)]


def _part(key: str) -> pa.Table:
    n = int(key[1:])
    return pa.table({"id": [f"{key}-{j}" for j in range(50)], "v": [n * 100 + j for j in range(50)]}, schema=SCHEMA)


def _build(store: StageStore, version: int, keys: list[str] = KEYS):
    return run_stage(store, SPEC, part_keys=keys, make_part=_part, provider="test", config={}, config_hash="c",
                     inputs={}, extra={"version": version})


def _fill_after(monkeypatch, whole_parts: int) -> None:
    """The Parquet writer gets ``whole_parts`` files out, then the device is full: half a file lands, ENOSPC."""
    real, written = files.pq.write_table, []

    def write(table, where, **kw):
        if len(written) >= whole_parts:
            Path(where).write_bytes(b"PAR1" + bytes(200))
            raise OSError(errno.ENOSPC, "No space left on device", str(where))
        written.append(where)
        return real(table, where, **kw)

    monkeypatch.setattr(files.pq, "write_table", write)


def test_full_disk_mid_build_names_the_space_publishes_nothing_and_resumes(tmp_path, monkeypatch):
    store = StageStore(tmp_path / "data")
    _build(store, 1, KEYS[:1])  # an earlier version, in the catalog
    old = store.manifest("s")
    _fill_after(monkeypatch, 2)
    with pytest.raises(DiskFull) as err:
        _build(store, 2)
    build_dir = store.stage_dir("s") / f"_build-{stage_fingerprint(SPEC, 'c', {}, {'version': 2})}"
    msg = str(err.value)
    assert f"no space left on the device of {build_dir} while writing stage 's' (2 parts written whole and kept, " \
           "3 to go at about " in msg and "free space there" in msg, msg
    assert err.value.directory == build_dir and err.value.needed_bytes > 0
    assert store.manifest("s") == old  # nothing of the new version is published
    assert not [p for p in store.root.rglob("*") if ".tmp-" in p.name]  # the half-written file is gone
    assert query(store, "select count(*) from s")[1] == [(50,)]  # the catalog still answers (the old version)

    monkeypatch.undo()  # space freed
    out = _build(store, 2)
    assert (out.resumed_parts, out.made_parts) == (2, 3)
    assert sorted(store.read("s").column("id").to_pylist()) == sorted(i for k in KEYS for i in
                                                                      _part(k).column("id").to_pylist())
    assert query(store, "select count(*) from s")[1] == [(250,)]


def test_full_disk_while_writing_the_catalog_keeps_the_old_one(tmp_path, monkeypatch):
    store = StageStore(tmp_path / "data")
    _build(store, 1, KEYS[:2])
    real = catalog._connect

    class Full:  # the new catalog file is created, then its first write finds the device full
        def __init__(self, path):
            self.con, self.path = real(path), path

        def execute(self, _sql):
            raise duckdb.IOException(f'IO Error: Could not write file "{self.path}": No space left on device')

        def close(self):
            self.con.close()

    def connect(path, read_only=False):
        return real(path, read_only) if read_only else Full(path)

    monkeypatch.setattr(catalog, "_connect", connect)
    with pytest.raises(DiskFull, match=f"no space left on the device of {store.root} while writing the catalog"):
        refresh_catalog(store)
    assert query(store, "select count(*) from s")[1] == [(100,)]
    assert not [p for p in store.root.iterdir() if ".tmp-" in p.name]


HOLD = textwrap.dedent("""
    import pathlib, sys, time
    from tasks.stages.lock import data_dir_lock
    with data_dir_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
        pathlib.Path(sys.argv[1], "holder-done").write_text("")  # the last thing before the lock is let go
""")


def _holder(data: Path, seconds: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(data), str(seconds)], cwd=REPO, stdout=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_second_writer_is_refused_naming_the_run_that_holds_the_directory(tmp_path):
    data = tmp_path / "data"
    holder = _holder(data, 120)
    try:
        with pytest.raises(DataDirBusy, match=f"in use by another run \\(pid {holder.pid} on .*`-c {data} 120`"):
            _build(StageStore(data), 1)
        assert not (data / "stages").exists()  # refused before anything was written
        p = subprocess.run([str(Path(sys.executable).parent / "rubricrl"), "run", "--only", "synthesize-queries"],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "RUBRICRL_DATA_DIR": str(data)},
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and f"pid {holder.pid}" in p.stderr and "--wait" in p.stderr, p.stderr[-2000:]
        assert "Traceback" not in p.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with data_dir_lock(data):  # the kernel dropped the killed holder's lock
        assert _build(StageStore(data), 1).manifest.row_count == 250


def test_wait_queues_behind_the_holder(tmp_path):
    data = tmp_path / "data"
    holder = _holder(data, 2)
    with data_dir_lock(data, wait=True):
        assert (data / "holder-done").exists()  # granted only once the holder let go
    assert holder.wait(timeout=60) == 0


def test_the_lock_is_reentrant_within_one_process(tmp_path):
    with data_dir_lock(tmp_path), data_dir_lock(tmp_path):
        _build(StageStore(tmp_path), 1, KEYS[:1])  # run_stage takes it again inside
    holder = _holder(tmp_path, 0)  # released at the outer exit: another process gets it
    assert holder.wait(timeout=60) == 0
