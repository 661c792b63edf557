"""The CDN mirror's server in the browser's own network namespace, and the launcher that starts it (a script, stdlib only).

A library file an app asks a CDN for (``tasks/env/cdn.py`` resolves it) used to reach the page as the body of a
routed response: base64 in JSON from Python through Playwright's driver to the browser, every byte copied and
decoded three times. That was measured at about 0.09 CPU-s a megabyte on 2 cores, and InteractScience's answers ask
for 1.5 MB an app on average (p5.js unminified is 4 MB), each check page again. Now the route writes the body once
into a folder (``ServedFiles``) and continues the request to this server (``route.continue_(url=...)``, a change of
URL the page cannot observe), and the browser's network service reads it over TLS on the loopback.

``browser-netns.sh`` runs ``python mirror_serve.py ROOT PORT BROWSER ARGS...`` inside the namespace (ROOT: the
``files`` folder, ``cert.pem`` and ``key.pem``, as ``launch.ServedFiles`` made them): it brings the loopback up
(a new namespace has it down), listens on 127.0.0.1:PORT, then forks. The child becomes the server
(``mirror_serve.py --serve ROOT FD``) and serves the files until the browser is gone; the parent becomes the browser (exec), so the process Playwright
started is the browser. The socket listens before the browser starts, so no page can ask before it is there.
"""
from __future__ import annotations

import fcntl
import os
import re
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

NAME = re.compile(r"^/([0-9a-f]{40})$")  # ServedFiles' names: the body's sha1, nothing else is served
TYPE = re.compile(r"^[a-z]+/[a-z0-9.+-]+(; ?charset=[a-z0-9-]+)?$")
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """Bring ``lo`` up when it is down (a new network namespace's is)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0)))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


def file_of(folder: str, path: str) -> tuple[str, str] | None:
    """(file, content type) a request path names in ``folder``, or None (pure): ``/<sha1>?type=<mime>`` only."""
    parts = urlsplit(path)
    m = NAME.match(parts.path)
    ctype = (parse_qs(parts.query).get("type") or ["application/octet-stream"])[0]
    if m is None or not TYPE.match(ctype):
        return None
    return os.path.join(folder, m.group(1)), ctype


def handler(folder: str) -> type[BaseHTTPRequestHandler]:
    class Files(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            found = file_of(folder, self.path)
            try:
                body = open(found[0], "rb").read() if found else None
            except OSError:
                body = None
            self.send_response(200 if body is not None else 404)
            self.send_header("access-control-allow-origin", "*")
            self.send_header("content-type", found[1] if body is not None and found else "text/plain")
            self.send_header("content-length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    return Files


def serve(root: str, sock: socket.socket) -> None:
    """Serve ``root``'s files over TLS on the listening ``sock`` until this process's parent (the browser) is gone."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(root, "cert.pem"), os.path.join(root, "key.pem"))
    server = ThreadingHTTPServer(sock.getsockname(), handler(os.path.join(root, "files")), bind_and_activate=False)
    server.daemon_threads = True
    # the handshake in each connection's thread: a client that stalls it cannot hold up the others
    server.socket = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    parent = os.getppid()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while os.getppid() == parent:
        time.sleep(0.5)


def main(argv: list[str]) -> None:
    if argv[1] == "--serve":  # the server, its own process (its command line names no browser)
        serve(argv[2], socket.socket(fileno=int(argv[3])))
        return
    root, port, browser = argv[1], int(argv[2]), argv[3]
    loopback_up()
    for _ in range(20):  # a relaunch outside a namespace: the crashed browser's server lets go within 0.5 s
        try:
            sock = socket.create_server(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.1)
    else:
        sock = socket.create_server(("127.0.0.1", port))  # its error names the port
    if os.fork() == 0:
        os.set_inheritable(sock.fileno(), True)
        os.execv(sys.executable, [sys.executable, __file__, "--serve", root, str(sock.fileno())])
    sock.close()  # the browser does not keep the listening socket
    os.execv(browser, [browser, *argv[4:]])


if __name__ == "__main__":
    main(sys.argv)
