"""A killed DeepSpeed op build must not hang every later training start.

On CPU, DeepSpeed's comm init JIT-builds its ``deepspeed_shm_comm`` op through
``torch.utils.cpp_extension``, which serialises builds with a ``FileBaton``: the builder creates
``<TORCH_EXTENSIONS_DIR>/<op>/lock`` (O_EXCL) and deletes it when done, and every other process polls
for as long as the file exists, with no limit and no message. A builder killed mid-build (Ctrl-C,
kill -9, the OOM killer) leaves the file behind, and every later train-sft / train-rl / test start
then hangs silently.

So each training process loads the op itself, before ``deepspeed.init_distributed`` asks for it
(DeepSpeed keeps loaded ops per process, so its own call then finds it), and does so holding an
``fcntl`` lock of ours on ``<op>.flock`` beside the build directory. The kernel drops that lock when
its holder dies, so a live rubricrl builder (any job on this kernel) is told apart from a dead one;
the lock is not held across the process-group rendezvous, where ranks wait for each other. Holding
it, a torch lock file that still exists is judged by evidence (``judge_baton``):

* a process of the lock's owner has it open (``/proc/<pid>/fd``; FileBaton keeps its fd open for
  the whole build): a live builder outside rubricrl. Leave it and wait for it.
* no such process, and every process of that owner could be read: left by a killed build. Removed,
  with a warning naming the file.
* some of the owner's processes could not be read (another user's lock, no ``/proc``): nothing
  proves either way, so wait, saying so, until the build directory has been quiet for
  ``BUILD_MAX_S`` (longer than any build takes), then remove it.
"""
from __future__ import annotations

import errno
import fcntl
import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

log = logging.getLogger("rubricrl.train")

# Longer than any build of the op takes: a cold build of deepspeed_shm_comm took 184 s on this
# project's 2-core machine at load average 12. Only consulted when live builders cannot be seen.
BUILD_MAX_S = 1200.0
# FileBaton.release closes its fd a moment before it deletes the file: a lock that looks unheld is
# looked at again after this pause, so a builder finishing right now is not robbed of its file.
RELEASE_GAP_S = 0.2
# How often a wait for a live (or unprovable) builder looks at the lock again.
POLL_S = 1.0

ABSENT, LIVE, STALE, UNPROVEN = "absent", "live", "stale", "unproven"


@dataclass(frozen=True)
class BatonFacts:
    """What can be observed about a torch build lock file at one moment."""

    exists: bool
    inode: int = 0
    holders: tuple[int, ...] | None = ()  # pids with the file open; None: not every candidate could be read
    quiet_s: float = 0.0  # seconds since anything in the build directory last changed


def judge_baton(facts: BatonFacts, max_build_s: float = BUILD_MAX_S) -> str:
    """ABSENT, LIVE (a process holds it), STALE (its builder is dead) or UNPROVEN.

    Only valid while the caller holds the builder lock, so no rubricrl process is building.
    """
    if not facts.exists:
        return ABSENT
    if facts.holders:
        return LIVE
    if facts.holders is not None:
        return STALE
    return STALE if facts.quiet_s >= max_build_s else UNPROVEN


def lock_holders(lock: Path, proc: Path = Path("/proc")) -> tuple[int, ...] | None:
    """Pids of the processes that have ``lock`` open, or None when that cannot be known.

    Only the file owner's processes are candidates (a lock is created, and kept open, by its
    builder); one of them whose fds cannot be read makes the answer unknowable.
    """
    st = os.stat(lock)
    if not proc.is_dir():
        return None
    holders, complete = [], True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != st.st_uid:
                continue
            fds = os.listdir(Path(entry.path, "fd"))
        except FileNotFoundError:  # the process ended meanwhile
            continue
        except PermissionError:
            complete = False
            continue
        for fd in fds:
            path = Path(entry.path, "fd", fd)
            try:
                # readlink first: stat-ing every socket and pipe of every process is the slow part
                if not os.path.basename(os.readlink(path)).startswith(lock.name):
                    continue
                held = os.stat(path)
            except OSError:
                continue
            if (held.st_dev, held.st_ino) == (st.st_dev, st.st_ino):
                holders.append(int(entry.name))
                break
    return tuple(holders) if complete else None


def last_change(build_dir: Path) -> float:
    """The newest mtime in the build directory (a live build keeps writing its objects there)."""
    times = []
    for entry in os.scandir(build_dir):
        try:
            times.append(entry.stat().st_mtime)
        except FileNotFoundError:  # a build's temporary file, gone meanwhile
            continue
    return max(times, default=0.0)


def baton_facts(build_dir: Path) -> BatonFacts:
    lock = build_dir / "lock"
    try:
        st = os.stat(lock)
        holders = lock_holders(lock)
    except FileNotFoundError:  # released meanwhile
        return BatonFacts(exists=False)
    return BatonFacts(True, st.st_ino, holders, time.time() - max(st.st_mtime, last_change(build_dir)))


def clear_stale_baton(build_dir: Path, *, max_build_s: float = BUILD_MAX_S, poll_s: float = POLL_S,
                      gap_s: float = RELEASE_GAP_S, sleep: Callable[[float], None] = time.sleep) -> str:
    """Return once ``build_dir/lock`` is gone: ABSENT if nobody left one, STALE if a dead builder's was removed.

    Waits (with a log line, never silently) while a live or unprovable builder holds it. Call
    holding ``builder_lock``.
    """
    lock = build_dir / "lock"
    said = None
    while True:
        facts = baton_facts(build_dir)
        verdict = judge_baton(facts, max_build_s)
        if verdict == ABSENT:
            return ABSENT
        if verdict == STALE:
            sleep(gap_s)
            again = baton_facts(build_dir)
            if judge_baton(again, max_build_s) == STALE and again.inode == facts.inode:
                try:
                    os.unlink(lock)
                except FileNotFoundError:
                    return ABSENT
                evidence = ("no process has it open" if again.holders is not None else
                            f"nothing in its directory changed for {again.quiet_s:.0f} s, longer than any build")
                log.warning("removed %s: a stale torch extension build lock (%s, and no rubricrl build holds %s; "
                            "left by a build that was killed). The op is built or loaded now.",
                            lock, evidence, builder_lock_path(build_dir))
                return STALE
            continue
        if verdict != said:
            if verdict == LIVE:
                log.info("waiting for pid(s) %s, which hold %s (a DeepSpeed op build in progress)",
                         ", ".join(map(str, facts.holders or ())), lock)
            else:
                log.warning("%s exists and no live builder can be seen or ruled out (the file belongs to another "
                            "user, or /proc is unreadable): waiting until it goes, or until the build directory has "
                            "been quiet for %.0f s, then removing it. Delete it now if no build is running.",
                            lock, max_build_s)
            said = verdict
        sleep(poll_s)


def builder_lock_path(build_dir: Path) -> Path:
    return build_dir.with_name(build_dir.name + ".flock")


@contextmanager
def builder_lock(path: Path) -> Iterator[None]:
    """Exclusive fcntl lock of ours around an op build; the file names the holder's pid for the wait message."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            log.info("waiting for pid %s, which is building or loading the DeepSpeed op (it holds %s)", owner, path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:  # a file system without flock: the /proc evidence still guards the lock
            if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            log.warning("%s: no fcntl locks on this file system (%s); concurrent builds are told apart by /proc only",
                        path, e)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # drops the flock


def op_build_dir(name: str) -> Path:
    """The directory torch builds op ``name`` in (TORCH_EXTENSIONS_DIR, else torch's default root)."""
    from torch.utils.cpp_extension import _get_build_directory

    return Path(_get_build_directory(name, verbose=False))


def load_comm_op() -> None:
    """Build or load DeepSpeed's CPU comm op now, a killed build's lock cleared first (see the module doc)."""
    from deepspeed.accelerator import get_accelerator
    from deepspeed.comm.torch import build_shm_op

    builder = get_accelerator().create_op_builder("ShareMemCommBuilder")
    if builder is None:  # not the CPU accelerator: DeepSpeed builds nothing at comm init
        return
    build_dir = op_build_dir(builder.NAME)
    with builder_lock(builder_lock_path(build_dir)):
        clear_stale_baton(build_dir)
        build_shm_op()
