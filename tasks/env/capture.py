"""What an app's page says while it loads and is used: console errors (with their place in the HTML) and
dialogs no init script answered (answered, and recorded with the probe action that opened them)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.env.evidence import RuntimeEvidence
from tasks.env.navigation import on_console_popup
from tasks.env.page import APP_URL, html_offset
from tasks.env.probe import ProbeSession
from tasks.env.probe_records import AnsweredDialog
from tasks.env.records import ConsoleError

if TYPE_CHECKING:
    from playwright.async_api import ConsoleMessage, Dialog


async def answer_dialog(dialog: Dialog, session: ProbeSession) -> None:
    """A dialog the init script did not answer (beforeunload, one from a frame): answered and recorded."""
    session.evidence.dialogs.append(AnsweredDialog(session.current_action, dialog.type, (dialog.message or "")[:300]))
    try:
        await dialog.accept() if dialog.type != "beforeunload" else await dialog.dismiss()
    except Exception:
        pass

def record_console(msg: ConsoleMessage, html: str, ev: RuntimeEvidence, session: ProbeSession) -> None:
    """A console message: the probe's and the popup guard's own signals go to them; an error the app logged on
    load becomes a console error with its place in the HTML (our blocking's "Failed to load resource" does not)."""
    if msg.type == "debug" and (session.on_console(msg.text) or on_console_popup(msg.text, ev, session)):
        return
    if msg.type != "error" or session.started:  # during the probe: the page's own records
        return
    text = msg.text
    if text.startswith("Failed to load resource"):
        return  # our own blocking; recorded in blocked_requests
    loc = msg.location or {}
    line = loc.get("lineNumber")
    if loc.get("url") != APP_URL or not isinstance(line, int):
        ev.console_errors.append(ConsoleError(text[:1000]))
        return
    at = (line + 1, int(loc.get("columnNumber") or 0) + 1)
    ev.console_errors.append(ConsoleError(text[:1000], *at, html_offset(html, *at)))
