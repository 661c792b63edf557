"""A local fake npm registry on 127.0.0.1: the real npm client installs from it unchanged (set-up time is the
only time the project reaches a registry, and tests reach none).

Each package is a dict version -> {file path: text}; the registry serves the packument (``GET /<name>``) and
the tarballs (``GET /<name>/-/<name>-<version>.tgz``) with their integrity, as registry.npmjs.org does.

Usage::

    with FakeNpm({"tinylib": {"1.0.0": {"lib/tinylib.js": "..."}}}) as reg:
        subprocess.run(["npm", "install", ...], env={..., "npm_config_registry": reg.url})
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote


def tarball(name: str, version: str, files: dict[str, str]) -> bytes:
    """An npm package tarball: ``package/package.json`` plus the files."""
    buf = io.BytesIO()
    entries = {"package.json": json.dumps({"name": name, "version": version, "main": next(iter(files), "index.js")}),
               **files}
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, text in entries.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{path}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class FakeNpm:
    def __init__(self, packages: dict[str, dict[str, dict[str, str]]]) -> None:
        self.tarballs: dict[str, bytes] = {}
        self.docs: dict[str, dict[str, Any]] = {}
        self._packages = packages
        self.log: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"
        for name, versions in packages.items():
            self.docs[name] = self._packument(name, versions)

    def _packument(self, name: str, versions: dict[str, dict[str, str]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for ver, files in versions.items():
            tgz = tarball(name, ver, files)
            short = name.rsplit("/", 1)[-1]
            path = f"{name}/-/{short}-{ver}.tgz"
            self.tarballs[path] = tgz
            out[ver] = {"name": name, "version": ver, "dist": {
                "tarball": self.url + path, "shasum": hashlib.sha1(tgz).hexdigest(),
                "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}}
        return {"name": name, "dist-tags": {"latest": max(versions, key=lambda v: tuple(map(int, v.split("."))))},
                "versions": out}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                path = unquote(self.path.lstrip("/").split("?")[0])
                fake.log.append(path)
                if path in fake.tarballs:
                    status, body, ctype = 200, fake.tarballs[path], "application/octet-stream"
                elif path in fake.docs:
                    status, body, ctype = 200, json.dumps(fake.docs[path]).encode(), "application/json"
                else:
                    status, body, ctype = 404, b'{"error":"Not found"}', "application/json"
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def __enter__(self) -> "FakeNpm":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
