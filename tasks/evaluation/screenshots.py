"""The screenshot columns of ``eval_results``: where the browser check kept each evaluated app's
screenshots, after load and after the probe, as paths relative to the data directory
(``stages/eval_results/screenshots/<app key>-<moment>.png``), or why there is none (``screenshot_note``).

The browser (``tasks.env.runtime.BrowserRuntime`` with a ``ScreenshotSpec``) takes them during the same load
that decides the runtime gate; this module only reads what it kept. Pure functions, plus the thumbnail the
report embeds.
"""
from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any, Callable

from schemas.contracts.evaluation import SCREENSHOT_MOMENTS, STAGE
from schemas.layout import stage_screenshots

FOLDER = stage_screenshots(STAGE)


def off_reason(screenshots: bool, runtime_enabled: bool) -> str | None:
    """Why no screenshot is taken at all in this run (None: they are)."""
    if not runtime_enabled:  # the browser first: without it there is nothing to screenshot, whatever the setting
        return "no browser (env.runtime.enabled=false)"
    if not screenshots:
        return "screenshots off (evaluation.screenshots=false)"
    return None


def _kept(rec: dict[str, str], moment: str, exists: Callable[[str], bool], why_not: str) -> tuple[str | None, str | None]:
    name = rec.get(moment)
    if name:
        path = f"{FOLDER}/{name}"
        return (path, None) if exists(path) else (None, f"{path} is missing (removed after the run)")
    return None, rec.get(f"{moment}_error") or why_not


def screenshot_columns(html: str | None, runtime_status: str | None, rec: dict[str, str] | None, *,
                       off: str | None, probe_enabled: bool, exists: Callable[[str], bool]) -> dict[str, Any]:
    """``screenshot_load``, ``screenshot_probe`` (paths or None) and ``screenshot_note`` (why one is None;
    None when both were kept) for one response. ``html`` is the extracted application (None: there is none),
    ``rec`` what the browser recorded for it (``BrowserRuntime.shots[app_key(html)]``)."""
    if off is not None or html is None:
        return {"screenshot_load": None, "screenshot_probe": None,
                "screenshot_note": off or "no HTML application in the response"}
    rec = rec or {}
    load, why_load = _kept(rec, "load", exists, f"the app never reached its screenshot (runtime status {runtime_status})")
    if not probe_enabled:
        probe, why_probe = None, "probe off (env.runtime.probe.enabled=false)"
    elif runtime_status != "ok":
        probe, why_probe = None, f"no probe ran (runtime status {runtime_status})"
    else:
        probe, why_probe = _kept(rec, "probe", exists, "the probe did not finish")
    notes = [f"{m}: {why}" for m, why in zip(SCREENSHOT_MOMENTS, (why_load, why_probe)) if why]
    return {"screenshot_load": load, "screenshot_probe": probe, "screenshot_note": "; ".join(notes) or None}


def thumbnail_uri(png: Path, width: int) -> str:
    """A ``width`` px wide JPEG of the screenshot as a data URI: the report stays one small file."""
    from PIL import Image

    with Image.open(png) as im:
        im = im.convert("RGB")
        im.thumbnail((width, width * im.height // max(1, im.width)))
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
