"""Teacher answers for SFT (paper D.1): the prompt, and the offline teacher.

The offline teacher writes a real, runnable single-file app from the task's rubric by rules: one
panel per initial-state item, one control per dynamic item whose handler updates shared state and
re-renders. It is a demonstration that every stage and gate works without a key, not a model: its
rows say provider=offline.
"""
from __future__ import annotations

import html
import json
import re

from schemas.rubric import Task

GENERATION_PROMPT = "generation"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "app"


def offline_app(task: Task) -> str:
    """A complete HTML document for ``task``: initial-state panels and one working control per dynamic item."""
    title = html.escape(task.query.split(".")[0][:80])
    panels = "\n".join(
        f'    <section class="panel" id="item-{html.escape(i.id)}" data-level="{i.level}">'
        f'<h2>{html.escape(i.id)}</h2><p>{html.escape(i.requirement)}</p></section>'
        for i in task.rubric.initial_state)
    controls = "\n".join(
        f'    <button type="button" class="action" data-item="{html.escape(i.id)}">{html.escape(i.requirement[:60])}</button>'
        for i in task.rubric.dynamic)
    items = json.dumps({i.id: i.requirement for i in task.rubric.dynamic})
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{title}</title>
  <style>
    body {{ font-family: system-ui, sans-serif; margin: 0; padding: 1rem; background: #f6f7fb; color: #1d2330; }}
    .panel {{ background: #fff; border-radius: 8px; padding: .75rem 1rem; margin: .5rem 0; box-shadow: 0 1px 3px #0002; }}
    .actions {{ display: flex; flex-wrap: wrap; gap: .5rem; margin: 1rem 0; }}
    .action {{ padding: .5rem .75rem; border: 0; border-radius: 6px; background: #3557d6; color: #fff; cursor: pointer; }}
    .action.done {{ background: #2e8b57; }}
    #log li {{ font-size: .9rem; }}
  </style>
</head>
<body>
  <h1 id="{_slug(task.query_id)}">{title}</h1>
  <main>
{panels}
  </main>
  <div class="actions">
{controls}
  </div>
  <p>Actions performed: <strong id="count">0</strong></p>
  <ol id="log"></ol>
  <script>
    const ITEMS = {items};
    const state = {{ count: 0, history: [] }};

    function render() {{
      document.getElementById('count').textContent = String(state.count);
      const log = document.getElementById('log');
      log.innerHTML = '';
      for (const entry of state.history) {{
        const li = document.createElement('li');
        li.textContent = entry;
        log.appendChild(li);
      }}
    }}

    function perform(itemId, button) {{
      state.count += 1;
      state.history.push(itemId + ': ' + ITEMS[itemId]);
      button.classList.add('done');
      render();
    }}

    document.querySelectorAll('.action').forEach((button) => {{
      button.addEventListener('click', () => perform(button.dataset.item, button));
    }});
    render();
  </script>
</body>
</html>"""


def offline_teacher_answer(task: Task) -> str:
    return ("Here is the complete application as a single HTML file.\n\n```html\n" + offline_app(task) + "\n```\n")
