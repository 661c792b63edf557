"""The browser sandbox shown from outside: canary servers on this machine, on ports the apps are told about,
record every TCP connection and UDP datagram; apps try every way out a page has. The canaries must see nothing,
and every attempt that is a request must appear in ``blocked_requests``.

Attempts that are not requests, so they cannot appear in ``blocked_requests`` (the canaries are their check):
- WebRTC ICE (STUN/TURN over UDP, TURN over TCP) and ``<link rel=preconnect>`` open sockets directly, not through
  the request pipeline that ``context.route`` sees; the browser's empty network namespace is the wall for them.
- Service-worker registration is refused by the context (``service_workers="block"``) before any script fetch.
- Requests of a SharedWorker run outside the page's context routing in Chromium; the namespace stops them.
"""
from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from schemas.config.env import RuntimeConfig
import tasks.env.launch as launch_mod
from tasks.env.launch import sandbox_launch
from tasks.env.runtime import BrowserRuntime

CFG = RuntimeConfig(settle_s=1.5, concurrency=4)  # the escape attempts' timers run
pytestmark = pytest.mark.skipif(not Path(CFG.executable_path).exists(),
                                reason="needs Debian's chromium-headless-shell: scripts/setup-system.sh")


class Canary:
    """TCP and UDP listeners on 127.0.0.1 and ::1, all on one port; every accept or datagram is a hit."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, str, bytes]] = []
        self._landed = threading.Condition()
        self._socks: list[socket.socket] = []
        self._stop = threading.Event()
        tcp4 = self._bind(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
        self.port = tcp4.getsockname()[1]
        self._bind(socket.AF_INET6, socket.SOCK_STREAM, ("::1", self.port))
        self._bind(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", self.port))
        self._bind(socket.AF_INET6, socket.SOCK_DGRAM, ("::1", self.port))
        self._threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in self._socks]
        for t in self._threads:
            t.start()

    def _bind(self, family: int, kind: int, addr: tuple) -> socket.socket:
        s = socket.socket(family, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        if kind == socket.SOCK_STREAM:
            s.listen(64)
        s.settimeout(0.2)
        self._socks.append(s)
        return s

    def _serve(self, s: socket.socket) -> None:
        proto = "tcp" if s.type == socket.SOCK_STREAM else "udp"
        host = s.getsockname()[0]
        while not self._stop.is_set():
            try:
                if proto == "tcp":
                    conn, _ = s.accept()
                    conn.settimeout(0.5)
                    try:
                        data = conn.recv(200)
                    except OSError:
                        data = b""
                    conn.close()
                else:
                    data, _ = s.recvfrom(2048)
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            with self._landed:
                self.hits.append((proto, host, data[:200]))
                self._landed.notify_all()

    def send_markers(self, mark: bytes) -> None:
        """A hit from this process (outside the sandbox) on each of the four listeners."""
        for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            with socket.create_connection((host, self.port), timeout=2) as c:
                c.sendall(mark)
            with socket.socket(fam, socket.SOCK_DGRAM) as u:
                u.sendto(mark, (host, self.port))

    def until_marked(self, mark: bytes, timeout_s: float = 10.0) -> list[tuple[str, str, bytes]]:
        """Wait until every listener recorded ``mark``: a listener serves its queue in order, so whatever reached
        it before the mark has been recorded too. The marks' hits, taken out of ``hits``."""
        with self._landed:
            self._landed.wait_for(lambda: sum(h[2] == mark for h in self.hits) >= 4, timeout_s)
            marks = [h for h in self.hits if h[2] == mark]
            self.hits[:] = [h for h in self.hits if h[2] != mark]
        return marks

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2)
        for s in self._socks:
            s.close()


@pytest.fixture(scope="module")
def canary():
    c = Canary()
    yield c
    c.close()


def escape_app(port: int) -> str:
    """One page trying every way out, to 127.0.0.1 and ::1 on the canary's port."""
    h4, h6 = f"http://127.0.0.1:{port}", f"http://[::1]:{port}"
    return f"""<!doctype html><html><head>
<link rel="prefetch" href="{h4}/prefetch">
<link rel="preconnect" href="{h6}">
<link rel="dns-prefetch" href="{h4}">
<link rel="stylesheet" href="{h4}/style.css">
<style>
@font-face {{ font-family: canary; src: url({h4}/font.woff2); }}
body {{ background-image: url({h6}/css-url.png); font-family: canary; }}
</style>
<script src="{h4}/script.js"></script>
</head><body><h1>escape</h1>
<img src="{h4}/img.png"><img src="{h6}/img6.png">
<iframe src="{h4}/iframe"></iframe>
<object data="{h6}/object"></object>
<iframe name="sink"></iframe>
<form id="f" action="{h4}/form" method="post" target="sink"><input name="a" value="1"></form>
<script>
const hosts = ['{h4}', '{h6}'];
for (const h of hosts) {{
  fetch(h + '/fetch', {{method: 'POST', body: 'x'}}).catch(() => {{}});
  const x = new XMLHttpRequest(); x.open('GET', h + '/xhr'); x.onerror = () => {{}}; x.send();
  try {{ const w = new WebSocket(h.replace('http', 'ws') + '/ws'); w.onerror = () => {{}}; }} catch (e) {{}}
  try {{ const es = new EventSource(h + '/eventsource'); es.onerror = () => es.close(); }} catch (e) {{}}
  try {{ navigator.sendBeacon(h + '/beacon', 'x'); }} catch (e) {{}}
  import(h + '/import.js').catch(() => {{}});
}}
document.getElementById('f').submit();
try {{ window.open('{h4}/window-open'); }} catch (e) {{}}
try {{
  const pc = new RTCPeerConnection({{iceServers: [
    {{urls: ['stun:127.0.0.1:{port}', 'stun:[::1]:{port}']}},
    {{urls: ['turn:127.0.0.1:{port}?transport=udp', 'turn:127.0.0.1:{port}?transport=tcp',
             'turn:[::1]:{port}?transport=udp'], username: 'u', credential: 'p'}}]}});
  pc.createDataChannel('d');
  pc.createOffer().then(o => pc.setLocalDescription(o)).catch(() => {{}});
  window._pc = pc;
}} catch (e) {{}}
const src = (tag) => `for (const h of ${{JSON.stringify(hosts)}}) {{
  fetch(h + '/${{tag}}-fetch').catch(() => {{}});
  try {{ const x = new XMLHttpRequest(); x.open('GET', h + '/${{tag}}-xhr'); x.send(); }} catch (e) {{}}
}}`;
const blob = (s) => URL.createObjectURL(new Blob([s], {{type: 'text/javascript'}}));
try {{ new Worker(blob(src('worker'))); }} catch (e) {{}}
try {{ new SharedWorker(blob(src('shared'))); }} catch (e) {{}}
if (navigator.serviceWorker) {{
  navigator.serviceWorker.register('/sw.js').catch(() => {{}});
  navigator.serviceWorker.register('{h4}/sw.js').catch(() => {{}});
}}
</script></body></html>"""


def navigate_app(port: int) -> str:
    """Leaving the page: top-level navigation to the canary once loaded."""
    return (f"<html><body><h1>nav</h1><script>addEventListener('load', () => setTimeout(() => "
            f"{{ location.href = 'http://127.0.0.1:{port}/navigate'; }}, 50));</script></body></html>")


def top_form_app(port: int) -> str:
    """A form posted to the canary in the top frame."""
    return (f"<html><body><form id='f' action='http://[::1]:{port}/top-form' method='get'>"
            f"<input name='q' value='1'></form><script>addEventListener('load', () => "
            f"document.getElementById('f').submit());</script></body></html>")


# Requests the page itself makes; each must be recorded as blocked (path -> where it was made).
RECORDED = ["/prefetch", "/style.css", "/font.woff2", "/css-url.png", "/script.js", "/img.png", "/img6.png", "/iframe",
            "/object", "/form", "/fetch", "/xhr", "/ws", "/eventsource", "/beacon", "/import.js", "/window-open",
            "/worker-fetch", "/worker-xhr"]


def test_no_attempt_reaches_the_canaries_and_requests_are_recorded(canary):
    port = canary.port
    with BrowserRuntime(CFG) as rt:
        esc, nav, form = rt.check_many([escape_app(port), navigate_app(port), top_form_app(port)])
        pids = rt.browser_pids()
        assert pids and all(os.readlink(f"/proc/{p}/ns/net") != os.readlink("/proc/self/ns/net") for p in pids)
    canary.send_markers(b"after-the-browser")  # whatever the browser sent is recorded before these marks
    assert len(canary.until_marked(b"after-the-browser")) == 4
    assert canary.hits == [], f"the sandbox leaked to this machine: {canary.hits}"
    blocked = [b.url for b in esc.blocked_requests]
    missing = [p for p in RECORDED if not any(u.endswith(p) or f"{p}?" in u for u in blocked)]
    assert not missing, f"not recorded as blocked: {missing}; recorded: {blocked}"
    for ip in ("127.0.0.1", "[::1]"):
        assert any(f"//{ip}:{port}/fetch" in u for u in blocked), (ip, blocked)
    assert any(b.url.endswith("/navigate") for b in nav.blocked_requests), nav.blocked_requests
    assert any("/top-form" in b.url for b in form.blocked_requests), form.blocked_requests


def test_canary_sees_what_an_unsandboxed_client_sends(canary):
    """The twin: the canary itself works (a hit from outside the browser is recorded, TCP and UDP, v4 and v6)."""
    canary.send_markers(b"GET / HTTP/1.0\r\n\r\n")
    got = sorted((p, h) for p, h, _ in canary.until_marked(b"GET / HTTP/1.0\r\n\r\n"))
    assert got == [("tcp", "127.0.0.1"), ("tcp", "::1"), ("udp", "127.0.0.1"), ("udp", "::1")]


def test_a_machine_that_cannot_isolate_the_browser_is_told_how_to_fix_it(monkeypatch):
    monkeypatch.setitem(launch_mod._netns_found, "opts", None)  # as if unshare were refused
    with pytest.raises(ValueError, match="env.runtime.network_namespace=false"):
        BrowserRuntime(CFG)
    off = CFG.model_copy(update={"network_namespace": False})
    assert sandbox_launch(off) == {"executable_path": CFG.executable_path}  # the twin: turned off, the bare browser
