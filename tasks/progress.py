"""Progress of long work: a bar on a terminal, a log line at a steady rate for the Prefect logs.

One ``Progress`` per piece of long work with a known total (a generator's apps in evaluate, the rollouts of
score-rollouts, build-rubrics' check dry runs, a stage's parts). ``update(n, checks=k)`` as items finish, from
any thread. On a terminal (stderr is a tty) a tqdm bar redraws in place; in every case a line goes to the
``rubricrl.progress`` logger (which the flows forward to the Prefect run logs) when work starts, then at
most every ``LOG_MIN_GAP_S`` seconds and only once another ``LOG_EVERY_FRACTION`` of the total is done, or
after ``LOG_MAX_GAP_S`` seconds whatever was done, and when it ends:

    evaluate teacher: 45/120 apps scored (38%), 312 checks run, 7m30s elapsed, about 12m15s left

Run: ``with Progress("evaluate teacher", 120, unit="apps", verb="scored") as p: ... p.update(1, checks_run=3)``.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, Callable, TextIO

from tqdm import tqdm

log = logging.getLogger("rubricrl.progress")
LOG_EVERY_FRACTION = 0.10  # a line per tenth of the work ...
LOG_MIN_GAP_S = 10.0  # ... but never two within ten seconds (short work logs its start and end only) ...
LOG_MAX_GAP_S = 60.0  # ... and at least a line a minute while items finish (long items, slow work)


def log_due(done: int, total: int, logged_done: int, since_logged_s: float) -> bool:
    """Whether a progress line is due now (pure): the end always; else a tenth more after ten seconds, or a
    minute since the last line."""
    if total and done >= total:
        return True
    if since_logged_s >= LOG_MAX_GAP_S:
        return True
    return since_logged_s >= LOG_MIN_GAP_S and done - logged_done >= LOG_EVERY_FRACTION * max(total, 1)


def duration(seconds: float) -> str:
    """``452.0`` -> ``7m32s``; ``3725`` -> ``1h02m``; ``9.4`` -> ``9s`` (pure)."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def progress_line(desc: str, done: int, total: int, unit: str, verb: str, counts: dict[str, int],
                  elapsed_s: float) -> str:
    """One progress line (pure): done of total, the other counts, elapsed and the estimate of what is left."""
    pct = f" ({100 * done // total}%)" if total else ""
    extra = "".join(f", {v:,} {k.replace('_', ' ')}" for k, v in counts.items())
    left = ""
    if 0 < done < total:
        left = f", about {duration(elapsed_s / done * (total - done))} left"
    return f"{desc}: {done:,}/{total:,} {unit} {verb}{pct}{extra}, {duration(elapsed_s)} elapsed{left}"


class Progress:
    """Counts finished items of a known total; thread-safe. ``update``'s keyword counts are other tallies shown
    beside, read as ``"<value> <key>"`` with underscores as spaces (``checks_run=3`` -> ``3 checks run``)."""

    def __init__(self, desc: str, total: int, *, unit: str = "items", verb: str = "done",
                 stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger = log) -> None:
        self.desc, self.total, self.unit, self.verb = desc, int(total), unit, verb
        self.done, self.counts = 0, {}  # type: ignore[var-annotated]
        self._clock, self._log, self._lock = clock, logger, threading.Lock()
        self._start = self._logged_at = clock()
        self._logged_done = 0
        self._closed = False
        stream = stream if stream is not None else sys.stderr
        tty = bool(getattr(stream, "isatty", lambda: False)())
        self._bar: Any = tqdm(total=self.total, desc=desc, unit=unit.rstrip("s") or unit, file=stream,
                              dynamic_ncols=True, leave=True, disable=not tty)
        self._log.info("%s: %s %s to go", desc, f"{self.total:,}", unit)

    def update(self, n: int = 1, **counts: int) -> None:
        with self._lock:
            self.done += n
            for k, v in counts.items():
                self.counts[k] = self.counts.get(k, 0) + v
            now = self._clock()
            self._bar.update(n)
            if self.counts:
                self._bar.set_postfix({k.replace("_", " "): f"{v:,}" for k, v in self.counts.items()}, refresh=False)
            if log_due(self.done, self.total, self._logged_done, now - self._logged_at):
                self._emit(now)

    def _emit(self, now: float) -> None:
        self._log.info("%s", self.line(now))
        self._logged_done, self._logged_at = self.done, now

    def line(self, now: float | None = None) -> str:
        elapsed = (self._clock() if now is None else now) - self._start
        return progress_line(self.desc, self.done, self.total, self.unit, self.verb, self.counts, elapsed)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._logged_done != self.done or self.done < self.total:
                now = self._clock()
                if self.done < self.total:
                    self._log.info("%s (stopped before the end)", self.line(now))
                else:
                    self._emit(now)
            self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
