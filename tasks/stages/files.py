"""Files of the stage store written safely and checked: atomic writes that leave nothing half-written when the
disk fills up, and each published part's size and sha256 checked against its manifest before anyone reads it.

A write goes to a temp file beside its target, is fsynced and renamed; on any failure (ENOSPC included) the temp
file is removed, so a target either exists whole or not at all. A full disk raises ``DiskFull``, which names
the directory, the space the write needed and what is free, and says how to go on.

Run: ``atomic_write_table(path, table)``; ``check_part(path, manifest.checksums[path.name])`` is None or the problem.
"""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# path -> (size, mtime_ns, inode, sha256) of parts already hashed in this process: a part is hashed once, not
# on every read, and any rewrite of the file (new mtime or inode) is hashed again
_HASHED: dict[str, tuple[int, int, int, str]] = {}
_HASHED_LOCK = threading.Lock()


class DiskFull(RuntimeError):
    """The device holding the data directory ran out of space mid-write; nothing half-written is left behind."""

    def __init__(self, message: str, directory: Path, needed_bytes: int) -> None:
        super().__init__(message)
        self.directory, self.needed_bytes = directory, needed_bytes


def human_bytes(n: float) -> str:
    """``1536`` -> ``1.5 KB`` (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def free_bytes(directory: Path) -> int | None:
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return None


def disk_full(directory: Path, needed_bytes: int, what: str) -> DiskFull:
    """The error of a write that found no space: where, what it needs, what is free, and the fix."""
    free = free_bytes(directory)
    return DiskFull(f"no space left on the device of {directory} while writing {what}: it needs about "
                    f"{human_bytes(needed_bytes)} ({human_bytes(free) if free is not None else 'unknown'} free); free "
                    "space there or point RUBRICRL_DATA_DIR at a larger disk, then run the same command again (what "
                    "was written whole is kept and the build resumes)", directory, needed_bytes)


def fsync_path(path: Path) -> None:
    """A file's or a folder's entries on disk (a rename is durable once its folder is synced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, write: Callable[[Path], Any], needed_bytes: int, what: str) -> None:
    """``write(tmp)`` into a temp file beside ``path``, fsync it, rename it over ``path``. ``needed_bytes``: the
    space the write takes at most (named when the disk is full)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if e.errno in _NO_SPACE:
            raise disk_full(path.parent, needed_bytes, what) from e
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    write_atomically(path, lambda tmp: tmp.write_bytes(data), len(data), str(path.name))


def atomic_write_table(path: Path, table: pa.Table) -> None:
    # the in-memory size bounds the compressed Parquet file from above: the space a failed write asks for
    write_atomically(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"), table.nbytes, str(path.name))


def file_checksum(path: Path) -> dict[str, Any]:
    """``{"bytes": size, "sha256": hex}`` of a file, as a manifest records each part."""
    st = path.stat()
    key = str(path)
    with _HASHED_LOCK:
        seen = _HASHED.get(key)
    if seen is not None and seen[:3] == (st.st_size, st.st_mtime_ns, st.st_ino):
        return {"bytes": st.st_size, "sha256": seen[3]}
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    with _HASHED_LOCK:
        _HASHED[key] = (st.st_size, st.st_mtime_ns, st.st_ino, digest)
    return {"bytes": st.st_size, "sha256": digest}


def check_part(path: Path, expected: dict[str, Any] | None) -> str | None:
    """None when the file matches its recorded size and sha256 (or nothing was recorded), else what is wrong."""
    if not path.is_file():
        return "is missing"
    if not expected:
        return None
    size = path.stat().st_size
    if size != expected["bytes"]:
        return f"has {size} bytes where its manifest records {expected['bytes']} (truncated or overwritten)"
    if file_checksum(path)["sha256"] != expected["sha256"]:
        return "does not match the sha256 its manifest records (overwritten or damaged)"
    return None
