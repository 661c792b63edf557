"""What decides the rubric items of a synthesized query (pure): each capability it was written from, and each
sentence the offline rules add to it, either carries the structure a check is built from or says why no check can
decide it, in one table (``EVIDENCE``).

A synthesized request is written from its spec (``tasks/queries/synthesize.py``): capabilities of the taxonomy,
each a phrase filled with the subject's words, then a closing sentence; the offline expansion may add a default
(``tasks/rubrics/expansion.py``). The rules find a clause's spec again by its whole text, as those rules wrote it
(the phrase filled with each subject's words, read into clauses the way any request is: ``text.clauses_of``),
never by parsing its words; the structure comes from the table, not from the sentence:

- ``Checkable``: the rubric item's fields (``schemas.rubric.STRUCTURE``) and what a check needs besides (a slider's
  bounds); ``{obj}``, ``{obj_one}``, ``{param}`` in a name are the subject's words, as in the phrase. The phrase
  states every name its check finds a control by (a button's quoted label, the slider or field named for the
  parameter) and what using it changes from a page just loaded (#52), and the offline teacher writes them. ``needs``: capabilities the query must also have for
  a check to be sound (a search filters something only where the app starts with items).
- ``Uncheckable``: the reason, recorded on the item's ``rubric_checks`` row (``check_problem``) and counted in the
  stage's report. A false alarm is worse than a miss: where a correct app could fail a check, there is none.

Run: ``clause_evidence(spec.clauses)``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from schemas.rubric import DRAWING_EFFECT, NO_ERROR_EFFECT, TEXT_EFFECT
from tasks.rubrics import text as T


@dataclass(frozen=True)
class Checkable:
    kind: str  # schemas.rubric.EVIDENCE_KINDS
    element: str | None = None
    trigger: str | None = None
    effect: tuple[str, ...] | None = None
    bounds: tuple[float, float] | None = None  # a takes_range slider's stated (min, max)
    others: tuple[str, ...] = ()  # the buttons the query names beside ``trigger`` (the teacher writes them all)
    needs: tuple[str, ...] = ()
    clashes: tuple[str, ...] = ()  # capabilities or sentences beside which a check could fail a correct app


@dataclass(frozen=True)
class Uncheckable:
    reason: str


# Why no check decides an item, said once each.
FLOW = Uncheckable("reaching the situation takes steps the query leaves to the app (what to answer, add or pick "
                   "first), so a check could not drive every correct app there")
UNSTATED_RESULT = Uncheckable("the query does not say what on screen shows the result (a drawing, a number, a "
                              "style), so a check could fail a correct app that shows it another way")
NO_LOCATOR = Uncheckable("the things to act on have no name, role or label the query gives, so a check cannot find "
                         "them in every correct app")
STYLE = Uncheckable("the result is a colour, a style or what pixels show, which the check language cannot read")
LAYOUT = Uncheckable("whether a layout is simple, grouped or usable is a judgement of the page's look, not an "
                     "observable change")
QUALITY = Uncheckable("whether an explanation is right and clear is a judgement of its words, which no check makes")
DOMAIN = Uncheckable("the domain's rules are not stated in the query, so a check has nothing to compare with")
STARTS = Uncheckable("whether it starts on load or behind a control is the app's choice, so waiting for it could "
                     "fail a correct app")
CONSTRAINT = Uncheckable("a format constraint: the format gate decides it, not a rubric check")
SPEED_CLASH = Uncheckable("another slider of the query is named for a speed too, so a check could operate the "
                          "wrong one")
SLIDER_CLASH = Uncheckable("another slider the query asks for has a name this one's matches, so a check could "
                           "operate the wrong one")

_SPEED = Checkable("takes_range", element="speed", trigger="speed", bounds=(0.5, 4.0))
# The first button clicked several times in a row throws no uncaught error: a repeated action a correct app
# handles; an app with no button leaves it inconclusive.
REPEATS = Checkable("repeat_no_error")
# What the app saved is read back on a reload without an uncaught error, once the first button has changed something
# to save (what a restored page shows is the app's choice: a timer, a status line need not come back).
RESTORES = Checkable("restores_on_reload")
# The seed field filled with the same seed before and after a reload shows the same page: a run reproduced (every
# document of a check starts with the same seeded Math.random, so this misses an app that ignores its seed for
# Math.random, and fails one whose randomness the seed leaves out). An app that also saves its data may show what
# the first run saved after the reload: no check there.
SEEDED = Checkable("reproduces_by_seed", element="seed")


def _uses(name: str, others: tuple[str, ...] = ()) -> Checkable:
    """The button the query names is there and using it throws no uncaught error (on a page just loaded the
    state it acts on may be empty, so what it changes is not asked: only that it works)."""
    return Checkable("operate_named", trigger=name, effect=(NO_ERROR_EFFECT,), others=others)


def _changes(name: str, effect: str = TEXT_EFFECT, others: tuple[str, ...] = ()) -> Checkable:
    """The button the query names, clicked on a page just loaded, changes the page's text (or the drawing): the
    phrase states what it does from there (a count that rises, a screen it opens, a message it shows)."""
    return Checkable("operate_named", trigger=name, effect=(effect,), others=others)


# The slider the phrase names for the subject's parameter, said to show its value: moved from end to end, the page's
# text changes (its ends are the browser's, Home and End, so no bounds are needed).
PARAM_SLIDER = Checkable("slides_named", trigger="{param}", effect=(TEXT_EFFECT,))
# The field the phrase names for the parameter: a value past the stated maximum, or text no format takes, typed in
# it makes the stated error message show (the page's text changes).
EDGE_VALUES = Checkable("rejects_out_of_range", element="{param}", bounds=(1.0, 100.0), effect=(TEXT_EFFECT,))
BAD_FORMAT = Checkable("rejects_bad_format", element="{param}", effect=(TEXT_EFFECT,))
# A countdown the phrase says starts on load, labelled "Time left": its text changes by itself.
COUNTDOWN = Checkable("text_by_itself", element="time left", effect=(TEXT_EFFECT,))
# The example items the phrase says the app starts with, as the items of a list: at least five (no upper bound).
EXAMPLES = Checkable("starts_listed", element="{obj}", bounds=(5.0, float("inf")))
# A name typed in the Name field and added twice with the 'Add' button: the second is refused with a message.
DUPLICATE = Checkable("refuses_duplicate", element="name", trigger="add", effect=(TEXT_EFFECT,))


def _capabilities() -> dict[str, Checkable | Uncheckable]:
    """The taxonomy's capabilities (tasks/data/taxonomy.json), by id."""
    from tasks.rubrics import vocab as X

    seeded = replace(SEEDED, clashes=("sm_persist_local", "sm_history_log", X.SAVED_DEFAULT, "ta_countdown"))
    add = "add {obj_one}"  # the 'Add {obj_one}' button several phrases name: one button adds, whatever it updates
    return {
        # each phrase names the control to use and what it changes from a page just loaded, or the reason says what
        # it leaves to the app
        "er_guarded_empty_state": _changes("clear all"), "er_reset_everything": _uses("reset"),
        "er_rapid_input": REPEATS, "er_self_contained": CONSTRAINT, "er_resize": LAYOUT, "er_undo_last": _uses("undo"),
        "in_drag_reorder": Checkable("reorder_by_drag", element="{obj}"),
        "in_keyboard_shortcuts": STYLE, "in_hover_details": NO_LOCATOR, "in_modal_edit": NO_LOCATOR,
        # a closed panel may stay in the page's text (moved off screen), so only that its toggle works is asked
        "in_toggle_panel": _uses("settings"),
        "in_slider_control": PARAM_SLIDER, "in_click_select": NO_LOCATOR,
        "wf_multi_step_wizard": _changes("next"),
        "wf_round_loop": _changes("next round"), "wf_summary_screen": _changes("finish"),
        "wf_checklist_progress": _changes("complete step"), "wf_restart_session": _changes("new session"),
        "wf_submit_confirm": _changes("delete all"),
        "sm_persist_local": RESTORES, "sm_derived_totals": _changes(add), "sm_filter_views": _uses(
            "completed", ("all", "active")), "sm_history_log": _changes(add), "sm_multi_counter": _changes("increment"),
        "sm_mode_switch": _uses("hard", ("easy", "medium")),
        "dl_scoring_rules": _changes("skip"), "dl_unit_conversion": UNSTATED_RESULT, "dl_rule_evaluation": DOMAIN,
        "dl_accuracy_stat": _changes("skip"), "dl_budget_limits": FLOW,
        # that a new set is generated (whether it keeps the domain's constraints is the judge's)
        "dl_randomised_generation": _changes("generate"), "dl_win_condition": _changes("give up"),
        "ip_search_filter": Checkable("filter_by_typing", element="{obj}"),
        "ip_sort_columns": FLOW, "ip_group_by": _changes("collapse all"), "ip_parse_text_input": FLOW,
        "ip_export_json": Uncheckable("a download and a file upload, which the check language cannot do"),
        "ip_tag_filter": FLOW,
        "si_step_run_pause": _uses("step", ("run", "pause")), "si_speed_control": _SPEED,
        "si_parameter_effect": PARAM_SLIDER,
        "si_physics_motion": Checkable("motion_by_itself", effect=(DRAWING_EFFECT,)),
        "si_population_rules": _changes("step"), "si_random_seed": seeded,
        # a theme toggle: that it works (the colours, and remembering the choice, are not asked)
        "pr_responsive_grid": LAYOUT, "pr_theme_toggle": _uses("dark"),
        "pr_visual_feedback": _changes("skip"),  # the message a skipped answer shows (its colour is the judge's)
        "pr_status_badges": STYLE,
        "pr_accessible_labels": STYLE, "pr_static_reference": QUALITY,
        "rc_all_options": DOMAIN, "rc_initial_content": EXAMPLES, "rc_help_panel": QUALITY,
        "rc_counts_display": _changes(add), "rc_edge_values": EDGE_VALUES,
        "dv_bar_chart": _changes(add, DRAWING_EFFECT), "dv_line_history": STYLE, "dv_pie_breakdown": STYLE,
        "dv_heatmap_grid": STYLE, "dv_axis_labels": STYLE,
        "iv_required_fields": FLOW, "iv_disable_invalid": Checkable("starts_disabled", element="{param}",
                                                                     trigger="submit"),
        "iv_duplicate_check": DUPLICATE, "iv_answer_reveal": _changes("skip"), "iv_format_hint": BAD_FORMAT,
        "ta_countdown": COUNTDOWN, "ta_stopwatch": _changes("start", others=("pause", "reset")),
        "ta_animated_transition": _changes(add),  # that adding works (how smoothly it moves is the judge's)
        "ta_interval_reminder": _changes("remind now"), "ta_timed_difficulty": _changes("hard", others=(
            "easy", "medium")),
    }


def _table() -> dict[str, Checkable | Uncheckable]:
    from tasks.queries import synthesize as S
    from tasks.rubrics import vocab as X

    return {
        **_capabilities(),
        # the closing sentences of an offline request, and the defaults the offline expansion writes in
        S.SIMPLE_CLOSER: LAYOUT, S.ONE_SCREEN_CLOSER: LAYOUT, S.HELP_TEXT_CLOSER: _uses("help"),
        S.GROUPED_CLOSER: LAYOUT,
        S.EDGE_CASES_CLOSER: REPEATS,  # "repeated actions": which other edge cases, and how, is left to the app
        S.IMMEDIATE_CLOSER: Uncheckable("it says how every change shows, not one change a check could make"),
        X.SCORE_DEFAULT: FLOW, X.TIMER_DEFAULT: replace(COUNTDOWN, needs=("ta_countdown",)),
        X.ACCURACY_DEFAULT: FLOW, X.SAVED_DEFAULT: RESTORES,
    }


@lru_cache(maxsize=1)
def evidence_table() -> dict[str, Checkable | Uncheckable]:
    """``EVIDENCE``: capability id or named sentence -> what decides its item (built on first use: the sentences'
    owners import the rubric rules)."""
    return _table()


@dataclass(frozen=True)
class ClauseSpec:
    """The spec a clause was written from: its key in the table, the subject's words, and what decides it (the
    subject's words filled in, a clash with another clause of the query made uncheckable)."""

    key: str
    subject: tuple[str, ...]
    evidence: Checkable | Uncheckable


def _clause_keys(text: str) -> list[str]:
    return [T.normalise(c.text) for c in T.clauses_of(text)]


@lru_cache(maxsize=1)
def _index() -> dict[str, tuple[str, tuple[str, ...]]]:
    """normalised clause text -> (table key, subject): every capability phrase filled with every subject's words,
    every named sentence."""
    from tasks.queries.synthesize import load_subjects, load_taxonomy

    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    subjects = [tuple(s) for rows in load_subjects().values() for s in rows]
    for cat in load_taxonomy().categories:
        for cap in cat.capabilities:
            for title, objs, obj, param in subjects:
                phrase = cap.phrase.format(obj=objs, obj_one=obj, param=param)
                for k in _clause_keys(phrase):
                    out.setdefault(k, (cap.id, (title, objs, obj, param)))
    for key in evidence_table():
        if key[:1].isupper():  # a named sentence (capability ids are lower case)
            for k in _clause_keys(key):
                out.setdefault(k, (key, ()))
    return out


def _filled(ev: Checkable, subject: tuple[str, ...]) -> Checkable:
    """``ev`` with the subject's words in its names: {obj}, {obj_one}, {param} (as the phrase was filled)."""
    words = dict(zip(("obj", "obj_one", "param"), subject[1:])) if len(subject) > 3 else \
        {"obj": "", "obj_one": "", "param": ""}
    fill = lambda n: n.format(**words) if n else n  # noqa: E731
    return replace(ev, element=fill(ev.element), trigger=fill(ev.trigger), others=tuple(fill(o) for o in ev.others))


def _slider(ev: Checkable | Uncheckable, subject: tuple[str, ...]) -> tuple[str, str] | None:
    """(kind, name) of the slider a check finds by its name: a stated speed control's element, a named slider's
    trigger (the subject's words filled in)."""
    if isinstance(ev, Checkable) and ev.kind in ("takes_range", "slides_named"):
        name = _filled(ev, subject)
        return ev.kind, (name.element if ev.kind == "takes_range" else name.trigger) or ""
    return None


def _resolved(ev: Checkable | Uncheckable, subject: tuple[str, ...], keys: set[str], phrases: list[str],
              sliders: list[tuple[str, str]]) -> Checkable | Uncheckable:
    if isinstance(ev, Uncheckable):
        return ev
    if any(n not in keys for n in ev.needs):
        return Uncheckable(f"sound only where the query also asks for {', '.join(ev.needs)} (it does not)")
    if any(c in keys for c in ev.clashes):
        return Uncheckable(f"the query also asks for {', '.join(c for c in ev.clashes if c in keys)}, so what it "
                           "keeps could make a correct app's pages differ")
    if ev.kind == "takes_range" and ev.element and sum(ev.element in p for p in phrases) > 1:
        return SPEED_CLASH
    mine = _slider(ev, subject)
    if mine and mine[0] == "slides_named" and any(o != mine and (o[1] in mine[1] or mine[1] in o[1]) for o in sliders):
        return SLIDER_CLASH  # a slider of the same kind and name is the same slider
    return _filled(ev, subject)


def clause_evidence(clauses: list[T.Clause]) -> list[ClauseSpec | None]:
    """For each clause, the spec it was written from and what decides it; None for a clause no rule wrote."""
    index, table = _index(), evidence_table()
    found = [index.get(T.normalise(c.text)) for c in clauses]
    keys = {f[0] for f in found if f}
    phrases = [T.normalise(c.text) for c, f in zip(clauses, found) if f]
    sliders = [s for s in (_slider(table[f[0]], f[1]) for f in found if f) if s]
    return [ClauseSpec(f[0], f[1], _resolved(table[f[0]], f[1], keys, phrases, sliders)) if f else None
            for f in found]
