"""How severe a failure the interaction probe caused is: blocking the app, or a defect of one control (pure).

The paper's rule (3.3, B.2) makes a major code_simulation finding fail the runtime gate, so any uncaught error
a probe action raised made the whole app runtime-invalid. ``env.runtime.probe.error_rule`` chooses:

- ``gate``: every failure an interaction caused blocks (an uncaught error, a hang, a submit that reloads the app);
- ``evidence``: a failure blocks when the evidence says the app stopped working for its user: a hang; a submit
  that reloads the page (the whole app's state is lost); an error after which the app's main loop (its animation
  frames, running before any action) no longer runs; failures on most of the controls the probe used (native
  controls and elements with click or drag listeners; every key is one control, the keyboard), where a control
  failed its user when its handler threw or nothing it should change showed (``failed_the_user``: an error that a
  deferred helper throws after the control's effect showed is that control's defect, not a failure of it).
  Otherwise the error is confined to one control's handler: a minor code_simulation finding plus a major finding on the rubric
  item that control serves (``judge_diagnosis.py``); after the control's effect showed (``effect_shown``), the minor
  finding alone: the item's effect is there.

The default is the rule that agrees better with the benchmark's own functional tests (docs/sandbox.md has the
figures; ``bench/bench_realapps.py --set env.runtime.probe.error_rule=gate`` measures the other one).

``env.runtime.probe.load_error_rule`` chooses the same for the uncaught errors at load (``load_errors_verdict``):
``gate`` fails the app on any of them; ``evidence`` has the probe use the app after the error, and the error blocks
when nothing answers: no control the probe used changed the page (its DOM, a canvas, a drawing, a dialog), or,
with no control to use, nothing moves by itself. An app that still answers keeps the error as a minor
code_simulation finding, and the items it broke are decided by their own checks and evidence.

Run: ``classify_failures(interaction, "evidence")`` -> the failures, each with ``blocking`` and ``why``;
``load_errors_verdict(interaction, "evidence")`` -> a ``LoadErrorsVerdict`` (``blocking``, ``why``).
"""
from __future__ import annotations

from dataclasses import replace

from tasks.env.probe import ANSWERS, interaction_failures
from tasks.env.probe_records import Action, ProbeRecord
from tasks.env.records import Failure, LoadErrorsVerdict

RULES = ("gate", "evidence")


NATIVE_CONTROLS = ("button", "a", "input", "select", "textarea", "summary", "label")


def controls(actions: list[Action]) -> dict[int, str]:
    """Action index -> the control it used, for the actions that used one: keys are one control (the keyboard);
    an element is one when it is a native control or has a click or drag listener (a bare canvas is not)."""
    out = {}
    for a in actions:
        if a.kind == "key":
            out[a.i] = "keyboard"
        elif a.kind in ("fill", "select") or a.tag in NATIVE_CONTROLS or a.handled:
            out[a.i] = f"{a.kind}:{a.target_index}"
    return out


def failed_the_user(sync: bool | None, i: int | None, actions: list[Action]) -> bool:
    """An error failed the user of its control when the handler itself threw (``sync``), or when the action showed
    nothing (no change of ``ANSWERS``). A deferred helper that throws after the control's effect showed (a
    ``setTimeout`` or promise after the handler returned) is a defect of that control, not a dead one, so it does not
    count toward "most controls failing" (pure)."""
    if sync is not False:
        return True
    a = actions[i] if isinstance(i, int) and 0 <= i < len(actions) else None
    return a is None or not set(a.changed) & set(ANSWERS)


def main_loop_stopped(inter: ProbeRecord) -> bool:
    """The app drew frames by itself before any action and drew none after the probe (pure)."""
    before, after = inter.liveness, inter.loop_after
    return before is not None and before.looped and after is not None and not after.looped


def classify_failures(inter: ProbeRecord | None, rule: str) -> list[Failure]:
    """The failures the probe caused (``probe.interaction_failures``), each with ``blocking`` and ``why``."""
    if rule not in RULES:
        raise ValueError(f"env.runtime.probe.error_rule={rule!r}; choose one of {', '.join(RULES)}")
    failures = interaction_failures(inter)
    if rule == "gate" or not failures or inter is None:
        return [replace(f, blocking=True, why="an interaction error fails the runtime gate") for f in failures]
    acts = inter.actions
    ctl = controls(acts)
    # every caused error counts, not only the first of each message: two buttons throwing alike are two controls
    failing = {ctl[i] for i in [e.action for e in inter.errors
                                if e.caused and failed_the_user(e.sync, e.action, acts)]
               + [f.action for f in failures if f.kind != "error" or failed_the_user(f.sync, f.action, acts)] if i in ctl}
    used = set(ctl.values())
    most = bool(used) and len(failing) * 2 > len(used)
    stopped = main_loop_stopped(inter)
    out = []
    for f in failures:
        if f.kind == "hang":
            why = "the page stopped responding"
        elif f.kind == "reload":
            why = "the submit reloads the page: the whole app's state is lost"
        elif stopped and not f.sync:
            why = "the app's main loop stopped after this error"
        elif most:
            why = f"failures on most controls ({len(failing)} of {len(used)} used)"
        elif f.kind == "error" and not failed_the_user(f.sync, f.action, acts):
            out.append(replace(f, blocking=False, effect_shown=True,
                               why="thrown after this control's effect showed, outside its handler"))
            continue
        else:
            out.append(replace(f, blocking=False, why="confined to this control's handler"))
            continue
        out.append(replace(f, blocking=True, why=why))
    return out


def load_errors_verdict(inter: ProbeRecord | None, rule: str) -> LoadErrorsVerdict:
    """Whether the uncaught errors at load block the app, from what the probe saw after them (pure): ``blocking``
    and ``why``. The form controls' values and the scroll do not count as an answer: the probe's own fill and
    scroll change them."""
    if rule not in RULES:
        raise ValueError(f"env.runtime.probe.load_error_rule={rule!r}; choose one of {', '.join(RULES)}")
    if rule == "gate":
        return LoadErrorsVerdict(True, "an uncaught error at load fails the runtime gate")
    if inter is not None and inter.status == "hung":
        return LoadErrorsVerdict(True, "the page stopped responding when used after the error")
    if inter is None or inter.status not in ("ok", "navigated"):
        return LoadErrorsVerdict(True, "the app could not be used after the error")
    acts = inter.actions
    ctl = controls(acts)
    answered = {ctl[a.i] for a in acts if a.i in ctl and a.outcome == "ok" and set(a.changed) & set(ANSWERS)}
    if ctl:
        n = len(set(ctl.values()))
        if answered:
            return LoadErrorsVerdict(False, f"the app still answers input after the error: {len(answered)} of {n} "
                                            "controls used changed the page")
        return LoadErrorsVerdict(True, f"none of the {n} controls used changed the page after the error")
    if inter.liveness is not None and inter.liveness.animated:
        return LoadErrorsVerdict(False, "the app has no control to use and still moves by itself after the error")
    return LoadErrorsVerdict(True, "after the error nothing on the page answers input or moves")
