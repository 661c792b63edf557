"""One writer per data directory: an exclusive ``flock`` on ``<data_dir>/run.lock``.

``rubricrl run`` holds it for the whole run, and every stage build and publish holds it too (a Prefect
deployment or a direct call of a flow), so two runs on one data directory never interleave parts of two
versions: the second one stops at once with a message naming the run that holds the directory (its pid,
host, command and start), or with ``wait=True`` queues behind it. The kernel drops the lock when its
holder dies, so a killed run never leaves the directory locked; what the lock file says about its holder
is only read while the lock is held.

Within one process the lock is re-entrant (a flow's stages inside ``rubricrl run``); the file descriptor
is not inherited by child processes (browsers, trainers), so they never keep it alive.

Run: ``with data_dir_lock(Path("data")): ...``.
"""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from schemas.layout import RUN_LOCK

log = logging.getLogger("rubricrl.lock")
_HELD: dict[str, list[int]] = {}  # resolved data dir -> [fd, depth] held by this process
_HELD_LOCK = threading.Lock()


class DataDirBusy(RuntimeError):
    """Another process holds the data directory."""


def holder_text(raw: str) -> str:
    """What the lock file says about its holder, in words (pure)."""
    try:
        h = json.loads(raw)
        return (f"pid {h['pid']} on {h['host']}, `{h['command']}`, since {h['started_at']}")
    except (json.JSONDecodeError, KeyError, TypeError):
        return "a process that has not yet said who it is"


def _holder_record() -> bytes:
    argv = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(argv),
                       "started_at": time.strftime("%Y-%m-%d %H:%M:%S %Z")}).encode()


def _acquire(path: Path, wait: bool) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = holder_text(os.pread(fd, 4096, 0).decode(errors="replace"))
            if not wait:
                raise DataDirBusy(
                    f"data directory {path.parent} is in use by another run ({who}); two runs on one data directory "
                    "would interleave parts of two stage versions. Wait for it to end (or stop it), use another "
                    "RUBRICRL_DATA_DIR, or pass --wait to queue behind it") from None
            log.warning("data directory %s is in use by %s; waiting for it to end", path.parent, who)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:  # a file system without flock (some network mounts): say so, do not pretend
            if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            log.warning("%s: this file system has no flock (%s); concurrent runs on it are not kept apart", path, e)
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_record(), 0)
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def data_dir_lock(data_dir: Path | str, wait: bool = False) -> Iterator[None]:
    """Hold ``data_dir``'s lock (re-entrant within this process); raise ``DataDirBusy`` naming the holder, or
    with ``wait`` block until it is free."""
    key = str(Path(data_dir).resolve())
    with _HELD_LOCK:  # held while acquiring: two threads of one process must not race for two flocks
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
        else:
            held = _HELD[key] = [_acquire(Path(key) / RUN_LOCK, wait), 1]
    try:
        yield
    finally:
        with _HELD_LOCK:
            held[1] -= 1
            last = held[1] == 0
            if last:
                del _HELD[key]
        if last:
            os.close(held[0])  # drops the flock
