"""Screenshots of an app's viewport, taken by the browser runtime during the same load that is judged
(evaluation only): ``<app key>-load.png`` after load and settle, ``<app key>-probe.png`` after the probe. The
time one takes is added to the app's hard limit, so taking one never changes a verdict; a screenshot that
fails is a note in the results."""
from __future__ import annotations

import hashlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import Page


_SHOT_MARGIN_S = 1.0  # the hard limit, moved while a screenshot runs, stays this far past its own timeout


def app_key(html: str) -> str:
    """The name of an app's screenshots: the same HTML application, the same files."""
    return hashlib.sha256(html.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class ScreenshotSpec:
    folder: Path  # where the PNGs go (created on first use)
    timeout_s: float  # one screenshot's limit; a page too busy to paint gets none, and its verdict stands


async def take_screenshot(page: Page, html: str, moment: str, spec: ScreenshotSpec, shots: dict[str, dict[str, str]],
                          limit: Any) -> None:
    """Keep the viewport as ``<app key>-<moment>.png`` and say so in ``shots[app key]`` (or why not). The hard
    ``limit`` (an asyncio timeout, or None) moves by the time it takes (the app's own time is unchanged); a kept
    file is not undone by a failed copy of the same app."""
    key, started = app_key(html), time.perf_counter()
    rec = shots.setdefault(key, {})
    if limit is not None:
        limit.reschedule(limit.when() + spec.timeout_s + _SHOT_MARGIN_S)
    try:
        png = await page.screenshot(type="png", timeout=spec.timeout_s * 1000)
        spec.folder.mkdir(parents=True, exist_ok=True)
        tmp = spec.folder / f".{key}-{moment}.{uuid.uuid4().hex[:8]}.tmp"
        tmp.write_bytes(png)
        os.replace(tmp, spec.folder / f"{key}-{moment}.png")
        rec[moment] = f"{key}-{moment}.png"
    except Exception as e:  # noqa: BLE001 - no screenshot is a note in the results, never a verdict
        first = (str(e).splitlines() or [""])[0][:200]
        rec.setdefault(f"{moment}_error", f"screenshot failed: {type(e).__name__}: {first}")
    finally:
        if limit is not None:
            limit.reschedule(limit.when() - spec.timeout_s - _SHOT_MARGIN_S + (time.perf_counter() - started))
