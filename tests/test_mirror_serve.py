"""The CDN mirror's server in the browser's namespace (tasks/env/mirror_serve.py, launch.ServedFiles): what it
serves, and that a library reaches the page through it under the URL the app asked for."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
from tasks.env.mirror_serve import file_of
from tasks.env.runtime import BrowserRuntime

CFG = RuntimeConfig()
SHA = "0" * 40


def test_the_server_serves_sha1_names_of_its_folder_and_nothing_else():
    assert file_of("/srv", f"/{SHA}?type=text/javascript") == (f"/srv/{SHA}", "text/javascript")
    assert file_of("/srv", f"/{SHA}?type=text/css%3B%20charset%3Dutf-8") == (f"/srv/{SHA}", "text/css; charset=utf-8")
    for bad in ("/../key.pem", "/key.pem", f"/{SHA}/../key.pem", f"/{SHA[:-1]}", f"/{SHA}?type=text/html%0d%0ax: y",
                f"//{SHA}", "/%2e%2e/cert.pem"):
        assert file_of("/srv", bad) is None, bad


THREE = "https://cdn.jsdelivr.net/npm/three@0.128.0/build/three.min.js"
# the app fails unless three.js ran and its code, as the page sees it (a stack through it), is at the asked URL
SEES_ITS_URL = f"""<!DOCTYPE html><html><body><h1>three.js, as the page sees it</h1><script src="{THREE}"></script><script>
if (typeof THREE === 'undefined' || !THREE.REVISION) throw new Error('three.js did not load');
let stack = '';
const d = new THREE.EventDispatcher();
d.addEventListener('x', () => {{ stack = new Error().stack; }});
d.dispatchEvent({{type: 'x'}});
if (!stack.includes({THREE!r}) || stack.includes('127.0.0.1') || document.scripts[0].src !== {THREE!r})
  throw new Error('seen as ' + stack);
</script></body></html>"""


@pytest.mark.skipif(not Path(CFG.executable_path).exists() or not CFG.cdn_root().is_dir(),
                    reason="needs chromium-headless-shell and the CDN mirror (make setup)")
def test_a_library_reaches_the_page_through_the_server_under_the_url_the_app_asked_for():
    with BrowserRuntime(CFG) as rt:
        ev = rt.check(SEES_ITS_URL)
        body = rt.mirror.resolve(THREE, "script").served.body
        served = {p.name for p in rt.served.folder.iterdir()}
    assert ev.status == "ok", (ev.page_errors, ev.blocked_requests)
    assert [s.url for s in ev.cdn_served] == [THREE]
    assert hashlib.sha1(body).hexdigest() in served  # the server's copy, not a body through Playwright's pipe


def _servers_of(root: Path) -> list[int]:
    """PIDs of the mirror servers serving ``root`` (their command line names it)."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--serve" in cmd and str(root).encode() in cmd:
            pids.append(int(d.name))
    return pids


@pytest.mark.skipif(not Path(CFG.executable_path).exists() or not CFG.cdn_root().is_dir(),
                    reason="needs chromium-headless-shell and the CDN mirror (make setup)")
def test_a_library_lost_because_the_server_died_is_an_environment_gap_not_a_broken_app():
    import os
    import signal
    import time

    with BrowserRuntime(CFG) as rt:
        assert rt.check(SEES_ITS_URL).runtime_valid(CFG) is True  # the twin: served, the app is valid
        servers = _servers_of(rt.served.root)
        assert len(servers) == 1, servers
        os.kill(servers[0], signal.SIGKILL)
        while _servers_of(rt.served.root):
            time.sleep(0.05)
        ev = rt.check(SEES_ITS_URL)
    assert ev.status == "page_error"  # three.js did not arrive
    gaps = ev.environment_gaps(CFG)
    assert [g.url for g in gaps] == [THREE] and "mirror's server did not answer" in gaps[0].reason, gaps
    assert ev.runtime_valid(CFG) is None  # no verdict on the app
