"""Teacher answers for SFT (paper D.1): the prompt, and the offline teacher.

The offline teacher writes a real, runnable single-file app from the task's rubric by rules: one
panel per initial-state item, one control per dynamic item whose handler updates shared state and
re-renders the status region. Panels and controls are named by ``item_label`` (the words the
offline rubric_checks rule looks for), so the teacher's answers pass their own template checks. It
is a demonstration that every stage and gate works without a key, not a model: its rows say
provider=offline.
"""
from __future__ import annotations

import html

from schemas.rubric import Task
from tasks.rubrics.checks_offline import item_label

GENERATION_PROMPT = "generation"


def offline_app(task: Task) -> str:
    """A complete, compact HTML document for ``task``: a panel per initial-state item and one working
    control per dynamic item whose handler updates shared state and re-renders. Kept short on purpose:
    the demo's tiny policy learns it by SFT, so probe samples can reach a complete app."""
    label = lambda i: html.escape(item_label(i.requirement))  # noqa: E731
    panels = "".join(f"<p>{label(i)}</p>" for i in task.rubric.initial_state)
    controls = "".join(f'<button class="act">{label(i)}</button>' for i in task.rubric.dynamic)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>App</title><style>.done{{color:green}}</style></head>
<body>{panels}{controls}<output id="count" role="status">0</output>
<script>
const state = {{ count: 0 }};
function render() {{ document.getElementById('count').textContent = String(state.count); }}
document.querySelectorAll('.act').forEach((b) => b.addEventListener('click', () => {{
  state.count += 1; b.classList.add('done'); render();
}}));
render();
</script></body></html>"""


def offline_teacher_answer(task: Task) -> str:
    return "```html\n" + offline_app(task) + "\n```\n"
