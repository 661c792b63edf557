"""The progress utility: when a log line is due (a fake clock, so nothing here depends on machine load), what
a line says, a bar only on a terminal, and score_batch counting each app and the checks it ran."""
from __future__ import annotations

import io
import json
import logging

import pytest

from tasks.progress import Progress, duration, log_due, progress_line


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("done,total,logged,since,due", [
    (120, 120, 110, 0.1, True),     # the end, however soon
    (13, 120, 0, 10.0, True),       # a tenth more and ten seconds
    (13, 120, 0, 9.9, False),       # a tenth more, too soon
    (11, 120, 0, 59.0, False),      # ten seconds, less than a tenth more
    (1, 120, 0, 60.0, True),        # a minute since the last line, whatever was done
    (0, 0, 0, 5.0, False),          # nothing to do yet
])
def test_when_a_line_is_due(done, total, logged, since, due):
    assert log_due(done, total, logged, since) is due


def test_a_line_says_done_of_total_the_counts_elapsed_and_what_is_left():
    assert progress_line("evaluate teacher", 45, 120, "apps", "scored", {"checks_run": 312}, 450.0) == \
        "evaluate teacher: 45/120 apps scored (37%), 312 checks run, 7m30s elapsed, about 12m30s left"
    assert progress_line("s", 3, 3, "parts", "written", {}, 3725) == "s: 3/3 parts written (100%), 1h02m elapsed"
    assert duration(9.4) == "9s" and duration(60) == "1m00s"


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "rubricrl.progress"]


def test_lines_come_at_a_steady_rate_not_one_per_item(caplog):
    caplog.set_level(logging.INFO, logger="rubricrl.progress")
    clock = Clock()
    with Progress("slow", 100, unit="apps", verb="scored", stream=io.StringIO(), clock=clock) as p:
        for _ in range(100):
            clock.t += 1.0  # one app a second: a line per tenth
            p.update(1, checks_run=2)
    lines = _lines(caplog)
    assert lines[0] == "slow: 100 apps to go"
    assert [ln.split(":")[1].split()[0] for ln in lines[1:]] == [f"{k}/100" for k in range(10, 101, 10)]
    assert lines[-1] == "slow: 100/100 apps scored (100%), 200 checks run, 1m40s elapsed"
    caplog.clear()
    with Progress("fast", 500, stream=io.StringIO(), clock=clock) as p:
        for _ in range(500):
            clock.t += 0.001  # short work: its start and its end only
            p.update(1)
    assert [ln.split(": ")[1].split(" ")[0] for ln in _lines(caplog)] == ["500", "500/500"]


def test_long_items_still_log_every_minute_and_a_stop_says_so(caplog):
    caplog.set_level(logging.INFO, logger="rubricrl.progress")
    clock = Clock()
    with pytest.raises(RuntimeError):
        with Progress("long", 1000, clock=clock, stream=io.StringIO()) as p:
            for _ in range(3):
                clock.t += 90.0
                p.update(1)
            raise RuntimeError("stopped")
    lines = _lines(caplog)
    assert len(lines) == 5 and lines[-1].endswith("(stopped before the end)") and "3/1,000" in lines[-1]


def test_a_bar_only_on_a_terminal():
    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        with Progress("work", 3, unit="apps", stream=stream) as p:
            p.update(3, checks_run=4)
    assert "3/3" in tty.getvalue() and "checks run=4" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_score_batch_counts_every_app_and_the_checks_it_ran():
    from schemas.config.env import EnvConfig
    from tasks.env.score_tables import task_from_row
    from tasks.env.score import ScoreInput, score_batch
    from tasks.llm.offline import OfflineProvider
    from tests.fixtures.env_inputs import FIX

    task = task_from_row(json.loads((FIX / "task_counter.json").read_text()))
    apps = [(FIX / name).read_text() for name in ("no_html.txt", "clean.txt", "syntax_error.txt")] * 2
    clock = Clock()
    p = Progress("batch", len(apps), unit="apps", stream=io.StringIO(), clock=clock)
    score_batch([ScoreInput(f"r{i}", task, a) for i, a in enumerate(apps)], provider=OfflineProvider(),
                cfg=EnvConfig.model_validate({"runtime": {"enabled": False}}), progress=p)
    assert p.done == 6 and p.counts == {"checks_run": 0}  # no browser: no check ran
