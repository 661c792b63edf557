"""CPU time of a bench and everything it started (the Playwright driver, the browser and its renderers): a
figure the machine's other load hardly moves, printed beside wall-clock rates on a shared machine."""
from __future__ import annotations

import os
from pathlib import Path


def tree_cpu_s() -> float:
    """CPU seconds of this process and every process below it (the driver, the browser, its renderers; ended
    ones through their parents once reaped)."""
    procs: dict[int, tuple[int, int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            procs[int(d.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _c) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += procs.get(pid, (0, 0))[1]
        todo += kids.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")
