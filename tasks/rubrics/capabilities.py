"""What decides the rubric items of a synthesized query (pure): each capability it was written from, and each
sentence the offline rules add to it, either carries the structure a check is built from or says why no check can
decide it, in one table (``EVIDENCE``).

A synthesized request is written from its spec (``tasks/queries/synthesize.py``): capabilities of the taxonomy,
each a phrase filled with the subject's words, then a closing sentence; the offline expansion may add a default
(``tasks/rubrics/expansion.py``). The rules find a clause's spec again by its whole text, as those rules wrote it
(the phrase filled with each subject's words, read into clauses the way any request is: ``text.clauses_of``),
never by parsing its words; the structure comes from the table, not from the sentence:

- ``Checkable``: the rubric item's fields (``schemas.rubric.STRUCTURE``) and what a check needs besides (a slider's
  bounds); ``{obj}`` in ``element`` is the subject's objects. ``needs``: capabilities the query must also have for
  a check to be sound (a search filters something only where the app starts with items).
- ``Uncheckable``: the reason, recorded on the item's ``rubric_checks`` row (``check_problem``) and counted in the
  stage's report. A false alarm is worse than a miss: where a correct app could fail a check, there is none.

Run: ``clause_evidence(spec.clauses)``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

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

_SPEED = Checkable("takes_range", element="speed", trigger="speed", bounds=(0.5, 4.0))
NO_ERROR_EFFECT = "no_error"  # an item's effect: using the control throws no uncaught error
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


def _table() -> dict[str, Checkable | Uncheckable]:
    from tasks.queries import synthesize as S
    from tasks.rubrics import vocab as X

    seeded = replace(SEEDED, clashes=("sm_persist_local", "sm_history_log", X.SAVED_DEFAULT))
    return {
        # taxonomy capabilities (tasks/data/taxonomy.json), by id
        "er_guarded_empty_state": FLOW, "er_reset_everything": _uses("reset"), "er_rapid_input": REPEATS,
        "er_self_contained": CONSTRAINT, "er_resize": LAYOUT,
        # an Undo button would be checkable as Reset is, but three of the demo's SFT queries ask for it, and the
        # teacher's button there changed the tiny tokenizer and policy (make run: probe 17% valid, was 31%)
        "er_undo_last": FLOW,
        "in_drag_reorder": Checkable("reorder_by_drag", element="{obj}"),
        "in_keyboard_shortcuts": STYLE, "in_hover_details": NO_LOCATOR, "in_modal_edit": NO_LOCATOR,
        # a closed panel may stay in the page's text (moved off screen), so only that its toggle works is asked
        "in_toggle_panel": _uses("settings"),
        "in_slider_control": UNSTATED_RESULT, "in_click_select": NO_LOCATOR,
        "wf_multi_step_wizard": Checkable("operate_named", trigger="next", effect=("text",)),
        "wf_round_loop": FLOW, "wf_summary_screen": FLOW, "wf_checklist_progress": FLOW, "wf_restart_session": FLOW,
        "wf_submit_confirm": FLOW,
        "sm_persist_local": RESTORES, "sm_derived_totals": FLOW, "sm_filter_views": FLOW, "sm_history_log": FLOW,
        "sm_multi_counter": NO_LOCATOR,
        "sm_mode_switch": _uses("hard", ("easy", "medium")),
        "dl_scoring_rules": FLOW, "dl_unit_conversion": UNSTATED_RESULT, "dl_rule_evaluation": DOMAIN,
        "dl_accuracy_stat": FLOW, "dl_budget_limits": FLOW, "dl_randomised_generation": DOMAIN,
        "dl_win_condition": FLOW,
        "ip_search_filter": Checkable("filter_by_typing", element="{obj}", needs=("rc_initial_content",)),
        "ip_sort_columns": FLOW, "ip_group_by": FLOW, "ip_parse_text_input": FLOW,
        "ip_export_json": Uncheckable("a download and a file upload, which the check language cannot do"),
        "ip_tag_filter": FLOW,
        "si_step_run_pause": _uses("step", ("run", "pause")), "si_speed_control": _SPEED, "si_parameter_effect": UNSTATED_RESULT,
        "si_physics_motion": STARTS, "si_population_rules": STARTS, "si_random_seed": seeded,
        # a theme toggle: that it works (the colours, and remembering the choice, are not asked)
        "pr_responsive_grid": LAYOUT, "pr_theme_toggle": _uses("dark"), "pr_visual_feedback": FLOW,
        "pr_status_badges": STYLE,
        "pr_accessible_labels": STYLE, "pr_static_reference": QUALITY,
        "rc_all_options": DOMAIN, "rc_initial_content": NO_LOCATOR, "rc_help_panel": QUALITY, "rc_counts_display": FLOW,
        "rc_edge_values": Uncheckable("the allowed minimum and maximum are not stated in the query"),
        "dv_bar_chart": FLOW, "dv_line_history": STYLE, "dv_pie_breakdown": STYLE, "dv_heatmap_grid": STYLE,
        "dv_axis_labels": STYLE,
        "iv_required_fields": FLOW,
        "iv_disable_invalid": Uncheckable("a field filled with a valid value at first leaves the button enabled, so "
                                          "its state on load decides nothing"),
        "iv_duplicate_check": FLOW, "iv_answer_reveal": FLOW, "iv_format_hint": FLOW,
        "ta_countdown": STARTS, "ta_stopwatch": Checkable("operate_named", trigger="start", effect=("text",)),
        "ta_animated_transition": FLOW,
        "ta_interval_reminder": Uncheckable("the reminder comes every few minutes, longer than a check may wait"),
        "ta_timed_difficulty": FLOW,
        # the closing sentences of an offline request, and the defaults the offline expansion writes in
        S.SIMPLE_CLOSER: LAYOUT, S.ONE_SCREEN_CLOSER: LAYOUT, S.HELP_TEXT_CLOSER: QUALITY, S.GROUPED_CLOSER: LAYOUT,
        S.EDGE_CASES_CLOSER: REPEATS,  # "repeated actions": which other edge cases, and how, is left to the app
        S.IMMEDIATE_CLOSER: Uncheckable("it says how every change shows, not one change a check could make"),
        X.SCORE_DEFAULT: FLOW, X.TIMER_DEFAULT: STARTS, X.ACCURACY_DEFAULT: FLOW, X.SAVED_DEFAULT: RESTORES,
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


def _resolved(ev: Checkable | Uncheckable, subject: tuple[str, ...], keys: set[str],
              phrases: list[str]) -> Checkable | Uncheckable:
    if isinstance(ev, Uncheckable):
        return ev
    if any(n not in keys for n in ev.needs):
        return Uncheckable(f"sound only where the query also asks for {', '.join(ev.needs)} (it does not)")
    if any(c in keys for c in ev.clashes):
        return Uncheckable(f"the query also asks for {', '.join(c for c in ev.clashes if c in keys)}, so what it "
                           "keeps could make a correct app's pages differ")
    if ev.kind == "takes_range" and sum(ev.element in p for p in phrases) > 1:
        return SPEED_CLASH
    objs = subject[1] if len(subject) > 1 else ""
    return replace(ev, element=ev.element.format(obj=objs) if ev.element else None)


def clause_evidence(clauses: list[T.Clause]) -> list[ClauseSpec | None]:
    """For each clause, the spec it was written from and what decides it; None for a clause no rule wrote."""
    index, table = _index(), evidence_table()
    found = [index.get(T.normalise(c.text)) for c in clauses]
    keys = {f[0] for f in found if f}
    phrases = [T.normalise(c.text) for c, f in zip(clauses, found) if f]
    return [ClauseSpec(f[0], f[1], _resolved(table[f[0]], f[1], keys, phrases)) if f else None for f in found]
