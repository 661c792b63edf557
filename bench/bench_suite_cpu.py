"""Where the test suite's CPU goes: runs a command (default the README's ``make test`` command) and samples every
process on the machine once a second, adding each one's CPU seconds to its kind (the pytest workers, the Prefect
test server, headless Chromium, the training and vLLM subprocesses, the ``rubricrl`` commands the tests start,
Node, the compiler building DeepSpeed's ops, any other Python). Prints CPU seconds per kind, their share and how many
processes spent them, the programs that make up "other" (kernel threads in brackets), the machine's whole CPU over
the run (``/proc/stat``: what the samples missed, short-lived processes mostly, is the difference) and the wall
time. Asserts nothing.

On a 2-core machine the suite is CPU-bound (two workers keep both cores busy), so its wall time falls only with
the CPU it spends: this says which kind of work to make cheaper. Run it on a quiet machine (``uptime``).

Run: ``.venv/bin/python bench/bench_suite_cpu.py [-- COMMAND ...]`` (default ``.venv/bin/python -m pytest -q -n 2``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import _safe  # noqa: F401 - the repo on sys.path, no paid call by accident

TICK = os.sysconf("SC_CLK_TCK")
# (kind, a piece of the command line that says it), first match wins: the order is from specific to general
KINDS = (
    ("chromium", "chromium"),
    ("prefect server", "prefect.server.api.server"),
    ("prefect server", "prefect server start"),
    ("vllm", "vllm"),
    ("training job", "-m training"),
    ("compiler (DeepSpeed ops)", "cc1plus"),
    ("node (playwright driver, PFT)", "node"),
    ("pytest worker", "pytest"),
    ("rubricrl command", "rubricrl"),
    ("other python", "python"),
)


def kind_of(cmdline: str) -> str:
    """The kind of a process from its command line (pure)."""
    for kind, piece in KINDS:
        if piece in cmdline:
            return kind
    return "other"


def program(cmdline: str) -> str:
    """A process's program name (pure): its first word's last path part, a retitled process's title as it is."""
    if cmdline.startswith("["):
        return cmdline.split("/", 1)[0] + "]" if "/" in cmdline else cmdline  # kworker/0:1 -> [kworker]
    return cmdline.split(" ", 1)[0].rsplit("/", 1)[-1][:40]


def snapshot() -> dict[tuple[int, str], tuple[str, float]]:
    """Every process by (pid, start time): its command line now and its CPU seconds so far. A pytest-xdist worker
    retitles itself for every test, so the command line cannot be part of the key."""
    out: dict[tuple[int, str], tuple[str, float]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cmd = cmd or f"[{(d / 'comm').read_text().strip()}]"  # a kernel thread has no command line
        except (OSError, IndexError):
            continue
        out[(int(d.name), fields[19])] = (cmd, (int(fields[11]) + int(fields[12])) / TICK)
    return out


def machine_cpu_s() -> float:
    """User + system seconds of the whole machine since boot (``/proc/stat``)."""
    parts = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return (int(parts[0]) + int(parts[1]) + int(parts[2])) / TICK  # user, nice, system


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="*", default=[sys.executable, "-m", "pytest", "-q", "-n", "2"])
    args = ap.parse_args()
    before = snapshot()
    last: dict[tuple[int, str], tuple[str, float]] = {}  # the newest (command line, CPU) seen per process
    start_cpu, start = machine_cpu_s(), time.monotonic()
    proc = subprocess.Popen(args.command)
    while proc.poll() is None:
        for key, (cmd, cpu) in snapshot().items():
            if key in before:
                cpu -= before[key][1]  # a process older than the run: only what it spent since
            last[key] = (cmd, cpu)
        time.sleep(1.0)
    wall, whole = time.monotonic() - start, machine_cpu_s() - start_cpu
    per: dict[str, float] = {}
    count: dict[str, int] = {}
    others: dict[str, float] = {}  # what "other" is: its processes by program name
    for cmd, cpu in last.values():
        k = kind_of(cmd)
        per[k] = per.get(k, 0.0) + cpu
        count[k] = count.get(k, 0) + (cpu > 0)
        if k == "other":
            others[program(cmd)] = others.get(program(cmd), 0.0) + cpu
    seen = sum(per.values())
    print(f"command: {' '.join(args.command)}  exit {proc.returncode}")
    print(f"wall {wall:.0f} s; machine CPU {whole:.0f} s ({whole / wall:.2f} cores busy on average); "
          f"sampled {seen:.0f} s, missed {whole - seen:.0f} s (processes shorter than a sample, the machine's own)")
    for k, cpu in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"  {k:32s} {cpu:8.0f} s  {100 * cpu / whole:5.1f} %  {count[k]:5d} processes")
    top = sorted(others.items(), key=lambda kv: -kv[1])[:8]
    print("  other, by program: " + ", ".join(f"{n} {c:.0f} s" for n, c in top))
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
