"""Configuration of the executable rubric checks: how the environment runs them.

The language's own bounds (steps per check, longest step timeout) are in ``schemas/checks.py``;
these are the run-time settings, read by ``tasks/env/checks.py`` and the rubric_checks stage.
Overrides: ``--set env.checks.enabled=false``.
"""
from __future__ import annotations

from pydantic import Field

from schemas.checks import MAX_STEP_TIMEOUT_MS
from schemas.config.base import Section
from schemas.config.rubrics import OFFLINE_MAX_ITEMS


class ClockConfig(Section):
    """The controlled clock every page of an app runs on (``tasks/env/pagetime.py``): the load page, the
    interaction probe and the checks. Read by the runtime (``env.runtime.clock``)."""


    start: str = Field("2025-01-06T09:00:00Z",
                       description="The instant every page starts at (Date and timers are the environment's, so an "
                                   "app is read the same way on every run)")
    busy_reads: int = Field(50_000, ge=1000, description="Clock reads in one task that mean the page busy-waits on "
                                                        "the clock: it leaves the controlled clock for its own")
    gl_frame_ms: int = Field(50, ge=16, le=200,
                             description="Page time between two animation frames of a page that draws with WebGL "
                                         "(16: every frame, as on a fast GPU): its frames are drawn in the GPU "
                                         "process, whose cost the renderer's max_lag cannot see")
    max_lag: float = Field(8.0, ge=1.0, le=50.0,
                           description="The load page's timers and frames may take this many times their page time "
                                       "to run (real time in the renderer, not counting the environment's round trips, "
                                       "over its steps less the slowest: one stall of a busy machine is forgiven); "
                                       "past that it leaves the controlled clock (its frames then drop, as in a "
                                       "browser on a busy machine) instead of running into the hard limit")


class ChecksConfig(Section):

    enabled: bool = Field(True, description="Run each item's check after the app loads (needs the browser)")
    step_timeout_ms: int = Field(1500, ge=50, le=MAX_STEP_TIMEOUT_MS,
                                 description="Limit (page time) of a step that gives none: finding its target, or its "
                                             "expectation becoming true (polled)")
    poll_ms: int = Field(50, ge=10, le=1000, description="Page time between two readings of an expectation (and "
                                                         "after each action) until it holds")
    picture_poll_ms: int = Field(200, ge=10, le=1000, description="Page time between two pictures of a canvas or "
                                 "drawing while its change is awaited, at most: from poll_ms it doubles up to this "
                                 "(each picture is a screenshot; the last is still taken once the limit passes)")
    settle_ms: int = Field(300, ge=0, le=5000, description="Page time after the fresh page's load before the first "
                                                           "step, at most: on the controlled clock it ends with the "
                                                           "first poll interval that changes nothing in the DOM")
    check_limit_s: float = Field(12.0, gt=0, description="Limit (page time) of one check (fresh page, load, all steps)")
    app_limit_s: float = Field(40.0, gt=0, description="Limit (page time) of all checks of one app, counted in rubric "
                                                       "order; the rest are inconclusive")
    max_checks: int = Field(OFFLINE_MAX_ITEMS, ge=1, le=64, description="Checks run per app, at most (rubric "
                            "order); by default as many as an offline rubric's items at most (rubrics.max_items' "
                            "default), so a behaviour item at the end of a long rubric is still checked")
    parallel: int = Field(2, ge=1, le=16, description="Checks of one app at once, at most, each lane a page of the "
                                                      "app's context that runs its checks one after another, each "
                                                      "in a fresh document; lanes past the first open only while the "
                                                      "runtime has app slots no app uses (their verdicts do not "
                                                      "depend on it)")
    max_slowdown: float = Field(12.0, ge=1.0, le=50.0,
                                description="Every limit above is page time (tasks/env/pagetime.py); a page on its "
                                            "own clock starved this many times over gets no more wall time, and its "
                                            "check is inconclusive; real-time work (requests, CSS animations) and "
                                            "Playwright's own waits before an action get this many times the step's "
                                            "limit (the one slowdown rule, and why this allowance is not "
                                            "runtime.max_slowdown: tasks/env/pagetime.py)")
    share_reads: bool = Field(True, description="Checks that only read the page (expectations, no action) are first "
                              "read together in one fresh document of the app; each that holds at its first reading "
                              "passes there, any other runs in its own document as before; the first check that acts "
                              "then runs in that document, which the readings left as loaded (the same verdicts, a "
                              "reload each saved); False: every check in its own")
    random_seed: int = Field(13, description="Math.random is seeded in every check page so a check reads the "
                                             "same app the same way on every run")
