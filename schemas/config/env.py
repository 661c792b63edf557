"""Configuration of the evaluation environment: reward numbers, gates, browser, judge.

Every number the environment uses to turn evidence into a reward lives here with its default
documented, so a reward can be reproduced from the config hash stored with each rewards row.
The paper (section 3.3) gives the tier order but no numbers; the defaults below are ours.

``EnvConfig`` is the ``env`` section of ``schemas.config.Config``; overrides follow the usual
``RUBRICRL_ENV__RUNTIME__ENABLED=false`` / ``--set env.runtime.enabled=false`` rules.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from schemas.config.base import Section
from schemas.config.checks import ChecksConfig, ClockConfig

# Project files (the CDN mirror) resolve against the project, not the current directory: `rubricrl score`
# run from elsewhere must find the same mirror and give the same verdicts.
PROJECT_ROOT = Path(__file__).resolve().parents[2]

RewardKind = Literal["hierarchical", "binary"]
REWARD_KINDS: tuple[str, ...] = ("hierarchical", "binary")


SCORED_TIERS = ("format_invalid", "source_invalid", "runtime_invalid", "valid")  # hierarchy order (paper 3.3)
TIERS = (*SCORED_TIERS, "missing")  # missing: the judge failed, so there is no reward


class RewardConfig(Section):
    """Hierarchical reward tiers (paper 3.3): no HTML < source-invalid < runtime-invalid < valid.

    Within the valid tier the reward is ``rubric_floor + (rubric_max - rubric_floor) * rubric_score``,
    so the worst valid app still outranks every runtime-invalid one and a clean app gets ``rubric_max``.
    """

    format_invalid: float = Field(0.0, description="No complete HTML application in the response")
    source_invalid: float = Field(0.1, description="HTML found, but a script/stylesheet does not parse or static_check fails")
    runtime_invalid: float = Field(0.2, description="Source valid, but the app throws/hangs/is blank or code_simulation fails")
    rubric_floor: float = Field(0.3, description="Valid app whose every rubric item is unmet")
    rubric_max: float = Field(1.0, description="Valid app with no rubric findings")
    level_weights: dict[str, float] = Field(
        default_factory=lambda: {"core_module": 3.0, "correct_rule": 2.0, "rendering_effect": 1.0},
        description="Weight of an item by its rubric_level in the continuous rubric score",
    )
    minor_penalty: float = Field(0.2, ge=0.0, lt=1.0,
                                 description="A minor item counts as met, less this fraction of its weight")

    @model_validator(mode="after")
    def _ordered(self) -> "RewardConfig":
        tiers = [self.format_invalid, self.source_invalid, self.runtime_invalid, self.rubric_floor, self.rubric_max]
        if any(b <= a for a, b in zip(tiers, tiers[1:])):
            raise ValueError(
                "env.reward tiers must be strictly increasing: format_invalid < source_invalid < runtime_invalid "
                f"< rubric_floor < rubric_max (got {tiers}); fix the numbers so the hierarchy holds")
        need = {"core_module", "correct_rule", "rendering_effect"}
        if set(self.level_weights) != need or any(w <= 0 for w in self.level_weights.values()):
            raise ValueError(f"env.reward.level_weights needs exactly {sorted(need)} with positive weights; "
                             f"got {self.level_weights}")
        return self


class StaticConfig(Section):
    """Source validity from tree-sitter parses (HTML, CSS, every inline script)."""

    html_errors_fail: bool = Field(False, description="HTML parse errors fail the source gate (browsers recover "
                                                       "from most, so by default they are recorded only)")
    max_errors: int = Field(50, ge=1, description="Syntax errors recorded per response, at most")


class ProbeConfig(Section):
    """The interaction probe: after load and settle, the app is used as a user would, in the same
    sandbox. Its evidence (per-action errors, dead controls, liveness) feeds both judges; a failure an interaction
    caused is a code_simulation finding, major (the runtime gate fails) when ``error_rule`` calls it blocking."""

    enabled: bool = Field(True, description="False loads the app only (no interaction evidence)")
    budget_s: float = Field(1.5, gt=0, le=30, description="Page time for the actions of one app, at most (each is "
                                                        "followed by one frame of the page's clock)")
    max_actions: int = Field(40, ge=1, le=500, description="Actions per app, at most (clicks, fills, keys, drags)")
    seed: int = Field(0, description="Seed of the order-preserving choice of values (text, numbers, options)")
    liveness_gap_s: float = Field(0.3, ge=0.3, description="Page time between the two visual samples of the liveness "
                                                            "check (at least 300 ms): one at load, one after the "
                                                            "settle time, which the probe stretches to this if shorter")
    liveness_start_s: float = Field(0.2, ge=0, description="The first liveness sample this long after load (after "
                                                             "first frames and one-off renders), the second "
                                                             "liveness_gap_s later")
    hang_grace_s: float = Field(3.0, gt=0, description="Past budget_s plus this, the page counts as hung by an "
                                                        "action (then re-checked alone before it is believed)")
    request_wait_s: float = Field(0.5, ge=0, description="After the actions, wait this long at most for the app's "
                                  "fetches to settle, so a rejection of a request the sandbox blocked is recorded "
                                  "(never blamed) whatever the machine load")
    resize_to: tuple[int, int] = Field((900, 640), description="The one viewport resize (width, height)")
    errors_fail: bool = Field(True, description="Failures an interaction caused (an uncaught error, a hang, a submit "
                                                "that reloads the app) are findings, and those error_rule calls "
                                                "blocking fail the runtime gate; False records them only")
    error_rule: Literal["gate", "evidence"] = Field(
        "evidence", description="Which interaction failures block the app (tasks/env/severity.py). gate: every one "
        "(the paper's rule: a major code_simulation finding fails the runtime gate). evidence: a hang, an error after "
        "which the app's main loop stops, or failures on most controls; an error confined to one control's handler "
        "is a major finding on the rubric item that control serves plus a minor code_simulation finding. The default "
        "agrees better with the InteractScience functional tests (docs/sandbox.md)")
    load_error_rule: Literal["gate", "evidence"] = Field(
        "evidence", description="Whether an uncaught error at load blocks the app (tasks/env/severity.py). gate: "
        "always (runtime-invalid). evidence: the probe uses the app after the error, which blocks when no control it "
        "used changed the page (or, with no control, nothing moves); otherwise it is a minor code_simulation finding. "
        "The default agrees better with the InteractScience functional tests (docs/sandbox.md)")
    max_keys: int = Field(12, ge=0, description="Keys pressed per app, at most (those the handlers compare against "
                                                "first, then arrows, space, enter)")


class RuntimeConfig(Section):
    """Runtime validity from loading the page in headless Chromium (Playwright)."""

    enabled: bool = Field(True, description="False (or --no-browser) skips the browser on machines without one")
    executable_path: str = Field(
        "/usr/lib/chromium/chromium-headless-shell",
        description="Debian's chromium-headless-shell (the old headless mode Playwright itself uses; about 3x less "
                    "CPU per app than full chromium's --headless, which preloads browser-UI renderers per context). "
                    "/usr/bin/chromium also works. Never `playwright install`")
    load_timeout_s: float = Field(5.0, gt=0, description="Time for the load event; past it the app is runtime-invalid")
    settle_s: float = Field(0.5, ge=0, description="Page time after load during which page errors still count (on "
                                                   "the controlled clock, env.runtime.clock)")
    hard_limit_s: float = Field(10.0, gt=0, description="Limit for one app's load, settle and probe, whatever it does, "
                                                        "counted on the page's own clock (the time it lived on its "
                                                        "real timers): a page that stops answering is stopped at this "
                                                        "much wall time, one starved by the machine's load gets the "
                                                        "time it did not have, up to max_slowdown times it")
    max_slowdown: float = Field(4.0, ge=1.0, le=20.0,
                                description="The hard limit in wall time is at most this many times hard_limit_s, "
                                            "however starved the page (the one slowdown rule and why this "
                                            "allowance is not checks.max_slowdown: tasks/env/pagetime.py)")
    concurrency: int = Field(8, ge=1, le=64, description="Apps loaded at once in one browser (one context each); "
                                                          "a check mostly waits (settle time), so this exceeds cores")
    swiftshader: bool = Field(True, description="Software WebGL (SwiftShader) so canvas/three.js apps run")
    network_namespace: bool = Field(
        True, description="Run the browser in an empty network namespace (unshare; as root, or through a user "
                          "namespace), the wall for sockets the request routes never see (WebRTC UDP, preconnect). "
                          "False leaves those to Chromium's flags, which do not stop WebRTC's UDP")
    console_errors_fail: bool = Field(False, description="console.error during load fails the gate (apps often log "
                                                         "handled errors, so by default they are recorded only)")
    blank_body_fails: bool = Field(True, description="A page that renders nothing visible is runtime-invalid")
    reload_loop_after: int = Field(2, ge=1, description="A page that reloads itself this many times after load and "
                                                        "before any user action never settles: runtime-invalid "
                                                        "(status reload_loop). One reload could be a guarded refresh")
    cdn_dir: Path | None = Field(Path("vendor/cdn/node_modules"),
                                 description="Pinned local copies of CDN libraries; a relative path is resolved "
                                             "against the project (not the current directory). None runs without "
                                             "the mirror on purpose (every CDN app then fails)")
    max_restarts: int = Field(5, ge=0, description="Browser restarts per batch before the rest is marked missing")
    recheck_timeouts: bool = Field(True, description="An app that timed out or hung beside others is checked again "
                                                     "alone before the verdict stands, and an app whose page crashed "
                                                     "is checked again alone and judged crashed only if it crashes "
                                                     "there too, else it has no verdict (verdicts must not depend on "
                                                     "load or concurrency)")
    probe: ProbeConfig = Field(default_factory=ProbeConfig)
    clock: ClockConfig = Field(default_factory=ClockConfig)

    def settle_time_s(self) -> float:
        """The wait after load: ``settle_s``, stretched to the liveness gap when the probe samples across it."""
        p = self.probe
        return max(self.settle_s, p.liveness_start_s + p.liveness_gap_s) if p.enabled else self.settle_s

    def cdn_root(self) -> Path | None:
        """The mirror's folder: ``cdn_dir`` as given when absolute, else under the project."""
        if self.cdn_dir is None:
            return None
        return self.cdn_dir if self.cdn_dir.is_absolute() else PROJECT_ROOT / self.cdn_dir

    @model_validator(mode="after")
    def _limits(self) -> "RuntimeConfig":
        need = self.load_timeout_s + self.settle_time_s() + (self.probe.budget_s if self.probe.enabled else 0.0)
        if self.hard_limit_s < need:
            raise ValueError(f"env.runtime.hard_limit_s ({self.hard_limit_s}) must be at least load_timeout_s + "
                             f"the settle time (at least probe.liveness_gap_s with the probe on) + probe.budget_s = "
                             f"{need}; raise it")
        return self


class JudgeConfig(Section):
    """The three-layer LLM judge (paper B.2, F.2)."""

    prompt: str = Field("judge", description="Prompt template name under tasks/prompts/")
    max_tokens: int = Field(8192, ge=256, description="Judge output budget")
    temperature: float = Field(0.0, ge=0.0, le=1.0)
    concurrency: int = Field(64, ge=1, le=1024, description="Judge calls in flight")
    judge_invalid_apps: bool = Field(True, description="Judge apps our own evidence already failed (their findings "
                                                       "still feed attribution); False saves calls")


class EnvConfig(Section):
    """The evaluation environment: ``rubricrl score`` and the score-rollouts flow."""

    reward_kind: RewardKind = Field("hierarchical", description="hierarchical (paper) or binary (ablation)")
    reward: RewardConfig = Field(default_factory=RewardConfig)
    static: StaticConfig = Field(default_factory=StaticConfig)
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    checks: ChecksConfig = Field(default_factory=ChecksConfig)
    task_runner: Literal["threads", "ray"] = Field("threads", description="Prefect task runner of score-rollouts")
    ray_address: str | None = Field(None, description="Ray cluster address; None starts a local Ray instance")
    workers: int = Field(2, ge=1, le=512, description="Parallel score workers (threads, or Ray tasks); "
                         "train-rl's streamed scoring with threads scores every finished group at once")


# The settings of the ``env`` section that cannot change a verdict, with the reason for each (dotted paths under
# ``env``). Every other field of the section, a new one too, enters the fingerprint of the scored stages
# (``tasks/env/publish.py``: ``env_fingerprint``), so changing it scores again.
FINGERPRINT_EXCLUDED: tuple[tuple[str, str], ...] = (
    ("runtime.concurrency", "apps loaded at once: verdicts must not depend on load (a timeout is re-checked alone)"),
    ("runtime.cdn_dir", "where the CDN mirror lies: its content enters the fingerprint instead"),
    ("checks.parallel", "checks of one app at once, each in a fresh document: their verdicts do not depend on it"),
    ("judge.concurrency", "judge calls in flight"),
    ("task_runner", "where the scoring runs (threads or Ray), not how it judges"),
    ("ray_address", "where the scoring runs"),
    ("workers", "parallel score workers"),
)
