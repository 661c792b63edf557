"""Teacher answers for SFT (paper D.1): the prompt, and the offline teacher.

The offline teacher writes a real, runnable single-file app from the query itself, the way a model
following the spec would: every element the query declares by id, with its kind, label, default, range
and options (``tasks/rubrics/prompt_spec.py`` reads them); outputs showing their stated initial text; one
canvas drawn from the app's state, so operating any control, pressing a key the query names or clicking
the canvas redraws it and updates the outputs; an animation when the query asks for motion (behind a
play button when it has one). A short request gets its title, a canvas that moves and answers input.
It never reads the rubric: it passes the checks because it does what the query says. It is a
demonstration that every stage and gate works without a key, not a model: its rows say provider=offline.
"""
from __future__ import annotations

import html
import json
import re

from schemas.rubric import Task
from tasks.rubrics.capabilities import Checkable, clause_evidence
from tasks.rubrics.prompt_controls import Control
from tasks.rubrics.prompt_spec import Spec, read_spec
from tasks.rubrics.vocab import TEACHER_PAIR_KIND_WORDS, names_drawing_host, shares_subject, start_name, stop_name

GENERATION_PROMPT = "generation"
_HAS_ID_SEP = re.compile(r"[-_]")
_LAST_ID_PART = re.compile(r"[-_][^-_]*$")  # radio-euler-0 -> radio-euler
_TRAILING_DIGITS = re.compile(r"\d+$")  # step1 -> step
_SCRIPT = """
const S = {v: {}, n: 0, t: 0, moving: %(moving)s};
const $ = (id) => document.getElementById(id);
const cv = document.querySelector('canvas');
function hash(s) { let h = 7; for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0; return h; }
function draw() {
  if (!cv) return;
  const g = cv.getContext('2d'), h = hash(JSON.stringify(S.v) + S.n);
  g.fillStyle = '#f4f4f4'; g.fillRect(0, 0, cv.width, cv.height);
  g.fillStyle = 'hsl(' + (h %% 360) + ',60%%,45%%)';
  const x = 30 + (h %% (cv.width - 60) + S.t * 2) %% (cv.width - 60), y = 30 + (h >> 8) %% (cv.height - 60);
  g.beginPath(); g.arc(x, y, 14 + (h >> 16) %% 12, 0, 2 * Math.PI); g.fill();
}
function changed(id, value) {
  S.v[id] = value; S.n += 1;
  %(status)s%(save)s
  %(outputs)s.forEach(([o, src]) => { const e = $(o); if (e) e.textContent = src && src in S.v ? String(S.v[src]) : 'update ' + S.n; });
  draw();
}
document.querySelectorAll('input, select').forEach((e) => e.addEventListener('input', () => changed(e.id || e.name, e.type === 'checkbox' || e.type === 'radio' ? e.checked : e.value)));
document.querySelectorAll('button').forEach((b) => b.addEventListener('click', () => {
  if (%(starts)s.includes(b.id)) S.moving = true; else if (%(stops)s.includes(b.id)) S.moving = false; else changed(b.id, S.n + 1);
}));
document.addEventListener('keydown', (ev) => changed('key', ev.key));
if (cv) cv.addEventListener('pointerdown', (ev) => changed('pointer', ev.offsetX + ',' + ev.offsetY));
function tick() { if (S.moving) { S.t += 1; draw(); } requestAnimationFrame(tick); }
%(restore)sdraw(); requestAnimationFrame(tick);
%(items)s"""
# What only an app with the capabilities' controls carries (capability_html), so the other apps stay as short as the
# demo's generation length needs: the status line a named button changes, the list to drag and to search
_STATUS_JS = "document.querySelectorAll('[data-status]').forEach((e) => { e.textContent = 'update ' + S.n; });"
# what an app that saves its data adds: the state saved on every change, read back on load
_SAVE_JS = "localStorage.setItem('app-state', JSON.stringify(S.v));"
_RESTORE_JS = "const saved = localStorage.getItem('app-state'); if (saved) Object.assign(S.v, JSON.parse(saved));\n"
_ITEMS_JS = """let dragged = null;
document.querySelectorAll('[data-item]').forEach((li) => {
  li.addEventListener('dragstart', () => { dragged = li; });
  li.addEventListener('dragover', (ev) => ev.preventDefault());
  li.addEventListener('drop', (ev) => {
    ev.preventDefault(); if (dragged && dragged !== li) { li.after(dragged); changed('order', S.n); } });
});
const search = document.querySelector('input[type=search]');
if (search) search.addEventListener('input', () => document.querySelectorAll('[data-item]').forEach((li) => {
  li.style.display = li.textContent.toLowerCase().includes(search.value.toLowerCase()) ? '' : 'none'; }));
"""
# a countdown said to start on load, ticking once a second; a button said to be disabled until its field is filled
_COUNTDOWN_JS = """setInterval(() => document.querySelectorAll('[data-countdown]').forEach((e) => {
  e.textContent = String(Math.max(0, Number(e.textContent) - 1)); }), 1000);
"""
_SUBMIT_JS = """document.querySelectorAll('input').forEach((f) => f.addEventListener('input', () =>
  document.querySelectorAll('[data-submit]').forEach((b) => { b.disabled = !f.value.trim(); })));
"""
LIST_ITEMS = 5  # the example items the teacher's list starts with
COUNTDOWN_FROM = 60  # the seconds a countdown the query asks for starts from (the offline expansion's default)


def _attr(name: str, value: object) -> str:
    return f' {name}="{html.escape(str(value), quote=True)}"'


def _num(v: float | None) -> str | None:
    return None if v is None else f"{v:g}"


def _group(cid: str) -> str:
    """A radio group's name from its id: radio-euler-0 -> radio-euler, step1 -> step."""
    return _LAST_ID_PART.sub("", cid) if _HAS_ID_SEP.search(cid) else _TRAILING_DIGITS.sub("", cid) or "choice"


def control_html(c: Control) -> str:
    """One declared element as a model following the plan would write it."""
    esc, label = html.escape, html.escape(c.label or c.id)
    lab = f'<label for="{esc(c.id)}">{label}</label>'
    if c.kind in ("range", "number"):
        attrs = "".join(_attr(k, v) for k, v in (("min", _num(c.min)), ("max", _num(c.max)), ("step", _num(c.step)),
                                                  ("value", c.default)) if v is not None)
        return f'{lab}<input type="{c.kind}" id="{esc(c.id)}"{attrs}>'
    if c.kind == "text":
        return f'{lab}<input type="text" id="{esc(c.id)}"{_attr("value", c.default or "")}>'
    if c.kind in ("checkbox", "radio"):
        name = _attr("name", _group(c.id)) if c.kind == "radio" else ""
        on = " checked" if c.default == "checked" else ""
        return f'<input type="{c.kind}" id="{esc(c.id)}"{name}{on}>{lab}'
    if c.kind == "select":
        opts = c.options or (c.default or "first", "second")
        body = "".join(f"<option{' selected' if o == c.default else ''}>{esc(o)}</option>" for o in opts)
        return f'{lab}<select id="{esc(c.id)}">{body}</select>'
    if c.kind == "button":
        return f'<button id="{esc(c.id)}">{label}</button>'
    if c.kind == "canvas":
        return f'<canvas id="{esc(c.id)}" width="480" height="300"></canvas>'
    if c.kind == "output":
        return f'<span id="{esc(c.id)}">{esc(c.default or "-")}</span>'
    return f'<div id="{esc(c.id)}" style="min-height:20px"></div>'


def _canvas_host(spec: Spec) -> str | None:
    """Where the one canvas goes when the plan declares none: the first drawing area said to hold it."""
    if any(c.kind == "canvas" for c in spec.controls):
        return None
    areas = [c for c in spec.controls if c.kind == "area"]
    held = [c for c in areas if names_drawing_host(c.id + " " + c.evidence)]
    pick = held or areas
    return pick[0].id if pick else None


def _paired(output: Control, spec: Spec) -> str | None:
    """The control an output displays the value of (they share a word of their ids: slider-ac / value-ac)."""
    paired = (c.id for c in spec.controls if c.is_control and shares_subject(output.id, c.id, TEACHER_PAIR_KIND_WORDS))
    return next(paired, None)


def _evidence(spec: Spec) -> list[Checkable]:
    return [f.evidence for f in clause_evidence(spec.clauses) if f is not None and isinstance(f.evidence, Checkable)]


def _named_html(spec: Spec, disabled: set[str]) -> str:
    """The elements the sentences name: a button (disabled at first where the query says so), a slider, a field."""
    out = []
    for n in spec.named:
        lab = html.escape(n.label)
        if n.kind == "button":
            off = " disabled data-submit" if n.label.lower() in disabled else ""
            out.append(f"<button{off}>{lab}</button>")
        else:
            kind = ' type="range" min="0" max="10" step="1" value="5"' if n.kind == "range" else ""
            out.append(f"<label>{lab} <input{kind}></label>")
    return "".join(out)


def _control_parts(ev: list[Checkable], spec: Spec) -> list[str]:
    """The sliders, buttons and fields the capabilities name, where the sentences did not name them already."""
    named = {(n.kind, n.label.lower()) for n in spec.named}
    parts = [f'<label>{html.escape(e.element.capitalize())} <input type="range" min="{e.bounds[0]:g}" '
             f'max="{e.bounds[1]:g}" step="0.5" value="1"></label>' for e in ev if e.kind == "takes_range" and e.bounds]
    sliders = [e.trigger for e in ev if e.kind == "slides_named" and e.trigger]
    parts += [f'<label>{html.escape(n.capitalize())} <input type="range" min="0" max="10" step="1" value="5">'
              "</label>" for n in dict.fromkeys(sliders) if ("range", n.lower()) not in named]
    fields = [e.element for e in ev if e.kind in ("rejects_out_of_range", "rejects_bad_format", "starts_disabled",
                                                  "refuses_duplicate") and e.element]
    parts += [f"<label>{html.escape(n.capitalize())} <input></label>" for n in dict.fromkeys(fields)
              if ("text", n.lower()) not in named]
    names = [n for e in ev if e.kind in ("operate_named", "refuses_duplicate") and e.trigger
             for n in (*e.others, e.trigger)]
    off = {e.trigger for e in ev if e.kind == "starts_disabled" and e.trigger}
    parts += [f"<button{' disabled data-submit' if n in off else ''}>{html.escape(n.capitalize())}</button>"
              for n in dict.fromkeys(names + sorted(off)) if ("button", n.lower()) not in named]
    return parts


def capability_html(spec: Spec) -> str:
    """What the capabilities of a synthesized request put on the page (``capabilities``: the spec they were written
    from): a slider with its stated bounds or named for the parameter, a button or field the query names, a list of
    items to drag and search, a seed field, a countdown labelled as stated, and a status line (marked when the app
    saves its state, and when something moves by itself)."""
    found = [f for f in clause_evidence(spec.clauses) if f is not None]
    ev = _evidence(spec)
    parts = _control_parts(ev, spec)
    labels = {n.label.lower() for n in spec.named if n.kind == "button"}
    obj = next((f.subject[2] for f in found if len(f.subject) > 2), "item")
    if any(e.kind == "filter_by_typing" for e in ev):
        parts.append(f'<input type="search" placeholder="Search {html.escape(obj)}s">')
    if found and any(e.kind in ("reorder_by_drag", "filter_by_typing", "starts_listed") for e in ev):
        parts.append("<ul>" + "".join(f'<li draggable="true" data-item>{html.escape(obj)} {k + 1}</li>'
                                      for k in range(LIST_ITEMS)) + "</ul>")
    if any(e.kind == "reproduces_by_seed" for e in ev):
        parts.append('<label>Seed <input type="number" value="1"></label>')
    parts += [f"<p>{html.escape(e.element.capitalize())}: <span data-countdown>{COUNTDOWN_FROM}</span> s</p>"
              for e in ev if e.kind == "text_by_itself" and e.element][:1]
    saves = any(e.kind == "restores_on_reload" for e in ev)
    names = {n for e in ev if e.kind == "operate_named" and e.trigger for n in (*e.others, e.trigger)}
    if saves and "save" not in labels and "save" not in names:  # a state to save needs something that changes it
        parts.append("<button>Save</button>")
    marks = " data-saves" * saves + " data-moves" * any(e.kind == "motion_by_itself" for e in ev)
    return "".join(parts) + (f"<p data-status{marks}>ready</p>" if found else "")


def _body(spec: Spec) -> str:
    if not spec.structured:
        title = spec.request or next((c.evidence for c in spec.clauses), "App")
        disabled = {e.trigger for e in _evidence(spec) if e.kind == "starts_disabled" and e.trigger}
        return (f"<h1>{html.escape(title[:120])}</h1>{_named_html(spec, disabled)}{capability_html(spec)}"
                '<canvas width="480" height="300"></canvas>')
    host = _canvas_host(spec)
    parts = []
    for c in spec.controls:
        el = control_html(c)
        if c.id == host:
            el = el.replace("></div>", '><canvas width="480" height="300"></canvas></div>')
        parts.append(f"<div>{el}</div>" if c.is_control else el)
    if host is None and not any(c.kind == "canvas" for c in spec.controls):
        parts.append('<canvas width="480" height="300"></canvas>')
    return "\n".join(parts)


def offline_app(task: Task) -> str:
    """A complete, compact HTML document for ``task``, written from its query (see the module docstring)."""
    spec = read_spec(task.query)
    buttons = [c for c in spec.controls if c.kind == "button"]
    starts = [c.id for c in buttons if start_name(f"{c.id} {c.label}", resume=True)]
    stops = [c.id for c in buttons if stop_name(f"{c.id} {c.label}")]
    outputs = [[c.id, _paired(c, spec)] for c in spec.controls if c.kind == "output"]
    body = _body(spec)
    moving = spec.motions or "data-moves" in body
    extra = (_COUNTDOWN_JS if "data-countdown" in body else "") + (_SUBMIT_JS if "data-submit" in body else "")
    script = _SCRIPT % {"moving": "true" if moving else "false", "outputs": json.dumps(outputs),
                        "starts": json.dumps(starts), "stops": json.dumps(stops),
                        "status": _STATUS_JS if "data-status" in body else "",
                        "save": _SAVE_JS if "data-saves" in body else "",
                        "restore": _RESTORE_JS if "data-saves" in body else "",
                        "items": (_ITEMS_JS if "data-item" in body else "") + extra}
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>App</title><style>canvas{{border:1px solid #ccc}}</style></head>
<body>
{body}
<script>{script}</script></body></html>"""


def offline_teacher_answer(task: Task) -> str:
    return "```html\n" + offline_app(task) + "\n```\n"
