"""The shared browser as the reward service uses it: apps in flight counted, a timeout beside others re-checked.

The service scores each item as a batch of one (so each answer is ready as soon as its own app is), and the
runtime re-checks a timed-out app only within a batch of several (``tasks.env.runtime.BrowserRuntime``:
``_check_all``). So here, as there: an app whose verdict load could have caused (``RuntimeEvidence.timed_out``)
while other apps were in the browser is checked once more, one re-check at a time in the process, and that
verdict stands, marked ``rechecked_from``. An app that was alone all along keeps its first verdict.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class ServiceBrowser:
    """``shared_runtime(env.runtime)`` with the count of apps in flight and the re-check of timeouts beside others."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self.pending = 0  # apps handed to the browser and not yet back (re-checks included)
        self._started = 0  # apps ever handed over: a change while an app ran means it had company
        self._rechecks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rubricrl-recheck")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def queue_depth(self) -> int:
        """Apps waiting for one of ``env.runtime.concurrency`` slots."""
        return max(0, self.pending - self.inner.cfg.concurrency)

    def check_each(self, htmls: list[str], checks: list[Any] | None = None) -> list[Future]:
        """``BrowserRuntime.check_each``: one future per app, resolved with the verdict that stands."""
        with self._lock:
            alone_at_start = self.pending == 0 and len(htmls) == 1
            self.pending += len(htmls)
            self._started += len(htmls)
            mark = self._started
        firsts = self.inner.check_each(htmls, checks)
        outs: list[Future] = []
        for i, first in enumerate(firsts):
            out: Future = Future()
            plan = checks[i] if checks is not None else None
            first.add_done_callback(lambda f, out=out, h=htmls[i], x=plan: self._first_done(
                f, out, h, x, alone_at_start, mark))
            outs.append(out)
        return outs

    def _first_done(self, first: Future, out: Future, html: str, plan: Any, alone_at_start: bool, mark: int) -> None:
        with self._lock:
            self.pending -= 1
            company = not alone_at_start or self._started != mark
        if first.cancelled() or first.exception() is not None:
            out.set_exception(first.exception() or RuntimeError("the browser check was cancelled"))
            return
        ev = first.result()
        if not (company and ev.timed_out and self.inner.cfg.recheck_timeouts):
            out.set_result(ev)
            return
        self._rechecks.submit(self._recheck, ev, out, html, plan)  # off the browser's event loop

    def _recheck(self, ev: Any, out: Future, html: str, plan: Any) -> None:
        with self._lock:
            self.pending += 1
            self._started += 1
        try:
            again = self.inner.check_each([html], None if plan is None else [plan])[0].result()
            again.rechecked_from = ev.status if ev.status != "ok" else "probe_hung"  # as the runtime marks it
            out.set_result(again)
        except BaseException as e:  # the caller sees the browser's failure, as for a first check
            out.set_exception(e)
        finally:
            with self._lock:
                self.pending -= 1
