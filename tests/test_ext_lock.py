"""A killed DeepSpeed op build's lock is cleared; a live builder's lock is left alone (training/ext_lock.py).

No op is built here: each test plants torch's build lock in a temporary build directory the way
``torch.utils.file_baton.FileBaton`` makes it (O_CREAT|O_EXCL, the fd open for the whole build, then
close and remove), by a child process that is alive or already gone.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time

import pytest

from training import ext_lock
from training.ext_lock import (ABSENT, LIVE, STALE, UNPROVEN, BatonFacts, builder_lock, builder_lock_path,
                               clear_stale_baton, judge_baton, lock_holders)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD = 10 * ext_lock.BUILD_MAX_S  # seconds: older than any build


@pytest.fixture
def build_dir(tmp_path):
    d = tmp_path / "exts" / "deepspeed_shm_comm"
    d.mkdir(parents=True)
    (d / "shm.o").write_bytes(b"half-built")
    return d


def plant(build_dir, age_s=0.0):
    """A lock whose builder is dead: created O_EXCL, fd closed, never removed."""
    lock = build_dir / "lock"
    os.close(os.open(lock, os.O_CREAT | os.O_EXCL))
    for p in build_dir.iterdir():
        os.utime(p, (time.time() - age_s,) * 2)
    return lock


def child(code: str, *args: str) -> subprocess.Popen:
    """A builder process; it prints 'ready' once it holds what it holds."""
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": REPO})
    assert p.stdout.readline().strip() == "ready"
    return p


# FileBaton's order: create O_EXCL, build with the fd open, close, remove (remove raises if the file was taken).
LIVE_BUILDER = """
    import os, sys, time
    lock = sys.argv[1]
    fd = os.open(lock, os.O_CREAT | os.O_EXCL)
    os.utime(lock, (time.time() - float(sys.argv[2]),) * 2)
    print("ready", flush=True)
    time.sleep(float(sys.argv[3]))
    os.close(fd)
    os.remove(lock)
"""


def test_verdicts():
    assert judge_baton(BatonFacts(exists=False)) == ABSENT
    # a process holding the file is a live builder however old and quiet the build looks
    assert judge_baton(BatonFacts(True, 1, (4242,), quiet_s=OLD)) == LIVE
    # nobody holds it and every candidate was seen: dead, even when it was made a moment ago
    assert judge_baton(BatonFacts(True, 1, (), quiet_s=0.0)) == STALE
    # holders unknowable: only a build directory quiet for longer than any build proves it dead
    assert judge_baton(BatonFacts(True, 1, None, quiet_s=5.0)) == UNPROVEN
    assert judge_baton(BatonFacts(True, 1, None, quiet_s=OLD)) == STALE


@pytest.mark.parametrize("age_s", [0.0, OLD], ids=["killed-just-now", "killed-long-ago"])
def test_dead_builders_lock_is_removed_with_a_warning(build_dir, age_s, caplog):
    lock = plant(build_dir, age_s)
    with caplog.at_level(logging.WARNING, "rubricrl.train"), builder_lock(builder_lock_path(build_dir)):
        assert clear_stale_baton(build_dir) == STALE
    assert not lock.exists() and (build_dir / "shm.o").exists()
    assert f"removed {lock}" in caplog.text and "no process has it open" in caplog.text


def test_no_lock_is_left_as_it_is(build_dir, caplog):
    with caplog.at_level(logging.INFO, "rubricrl.train"):
        assert clear_stale_baton(build_dir) == ABSENT
    assert caplog.text == ""


def test_live_builders_lock_is_left_alone_and_waited_for(build_dir, caplog):
    lock = build_dir / "lock"
    # an old lock: age alone must not condemn a builder that is still running
    p = child(LIVE_BUILDER, str(lock), str(OLD), "0.6")
    assert lock_holders(lock) == (p.pid,)
    with caplog.at_level(logging.INFO, "rubricrl.train"):
        assert clear_stale_baton(build_dir, poll_s=0.05) == ABSENT
    assert p.wait(10) == 0, "the builder's own remove failed: its lock was taken from it"
    assert f"waiting for pid(s) {p.pid}" in caplog.text and "removed" not in caplog.text


def test_rubricrl_builder_invisible_to_proc_is_waited_for(build_dir):
    """A job of ours on another host of a shared file system: no /proc evidence, only our flock."""
    p = child("""
        import os, sys, time
        from pathlib import Path
        from training.ext_lock import builder_lock, builder_lock_path
        build_dir = Path(sys.argv[1])
        with builder_lock(builder_lock_path(build_dir)):
            os.close(os.open(build_dir / "lock", os.O_CREAT | os.O_EXCL))
            print("ready", flush=True)
            time.sleep(0.5)
            os.remove(build_dir / "lock")
    """, str(build_dir))
    with builder_lock(builder_lock_path(build_dir)):
        assert clear_stale_baton(build_dir, poll_s=0.05) == ABSENT
    assert p.wait(10) == 0, "the builder's own remove failed: its lock was taken from it"


def test_lock_that_turns_live_during_the_second_look_is_kept(build_dir):
    """The pause before removal: a lock that looked dead but is a live builder's on the second look stays."""
    lock = plant(build_dir, OLD)
    held = {}

    def sleep(_s):
        if not held:  # a builder released and a new one took the lock meanwhile
            os.remove(lock)
            held["fd"] = os.open(lock, os.O_CREAT | os.O_EXCL)
        else:  # the new builder is done
            os.close(held["fd"])
            os.remove(lock)

    assert clear_stale_baton(build_dir, sleep=sleep) == ABSENT


def test_unprovable_holders_wait_for_a_quiet_build_dir(build_dir, monkeypatch, caplog):
    """Holders cannot be read (another user's lock, no /proc): a fresh lock waits, an old one goes."""
    monkeypatch.setattr(ext_lock, "lock_holders", lambda lock: None)
    lock = plant(build_dir, 0.0)

    class Waited(Exception):
        pass

    def sleep(_s):
        raise Waited

    with caplog.at_level(logging.WARNING, "rubricrl.train"), pytest.raises(Waited):
        clear_stale_baton(build_dir, sleep=sleep)
    assert lock.exists() and f"{lock} exists and no live builder can be seen" in caplog.text
    for p in build_dir.iterdir():
        os.utime(p, (time.time() - OLD,) * 2)
    caplog.clear()
    with caplog.at_level(logging.WARNING, "rubricrl.train"):
        assert clear_stale_baton(build_dir, sleep=lambda s: None) == STALE and not lock.exists()
    assert "nothing in its directory changed for" in caplog.text


def test_no_proc_means_holders_unknown(build_dir, tmp_path):
    lock = plant(build_dir)
    assert lock_holders(lock, proc=tmp_path / "no-proc") is None


def test_training_start_clears_the_lock_before_deepspeed(monkeypatch, tmp_path):
    from training import engine

    seen = {}

    class Called(Exception):
        pass

    def load_comm_op():
        seen["dir"] = os.environ.get("TORCH_EXTENSIONS_DIR")
        raise Called

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(engine, "load_comm_op", load_comm_op)
    monkeypatch.setitem(sys.modules, "deepspeed", None)  # were DeepSpeed reached first, it fails here, not builds
    with pytest.raises(Called):
        engine.init_distributed("gloo")
    assert seen["dir"] == str(tmp_path)
    # the directory judged is the one torch builds in
    assert ext_lock.op_build_dir("deepspeed_shm_comm") == tmp_path / "deepspeed_shm_comm"
