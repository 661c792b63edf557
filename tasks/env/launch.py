"""How the browser is launched for the runtime: its flags, the network namespace it runs in, and the CDN
mirror's server beside it.

The walls the flags build (no name resolves, no WebRTC UDP, software compositing) are described in
``tasks/env/runtime.py``; ``sandbox_launch`` wraps the browser in ``browser-netns.sh`` so that it starts in a
network namespace of its own, or refuses to start where none can be made. In that namespace only the mirror's
server (``mirror_serve.py``) listens, on the loopback; ``ServedFiles`` is its runtime side: the bodies the routes
hand it, and the URL each is served at.
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from schemas.config.env import RuntimeConfig
from tasks.env.page import APP_ORIGIN


class ServedFiles:
    """The mirror's bodies as files its server (``mirror_serve.py``, in the browser's namespace) reads, each
    named by its sha1; ``url`` is where the browser finds one. A self-signed certificate for 127.0.0.1, made
    here, is the one the browser accepts there (``launch_args``: its key's hash, nothing wider)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="rubricrl-mirror-"))
        self.folder = self.root / "files"
        self.folder.mkdir()
        self.spki = _self_signed(self.root)
        with socket.socket() as s:  # a port free here is free in a new namespace too
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base = f"https://127.0.0.1:{self.port}/"
        self._asked: dict[str, set[str]] = {}  # file name -> the URLs it answered

    def url(self, body: bytes, content_type: str, asked: str) -> str:
        """Where the server serves ``body``, the answer to the URL an app ``asked`` for."""
        name = hashlib.sha1(body).hexdigest()
        if name not in self._asked:
            tmp = self.folder / f".{name}"
            tmp.write_bytes(body)
            os.replace(tmp, self.folder / name)
        self._asked.setdefault(name, set()).add(asked)
        return f"{self.base}{name}?type={quote(content_type)}"

    def asked_for(self, url: str) -> set[str]:
        """The URLs apps asked for that ``url`` (one of the server's) answers; empty for any other URL."""
        return self._asked.get(urlsplit(url).path.lstrip("/"), set()) if url.startswith(self.base) else set()

    def server_env(self) -> dict[str, str]:
        """What ``browser-netns.sh`` needs to start the server (``mirror_serve.py ROOT PORT BROWSER ARGS``)."""
        return {"RUBRICRL_PYTHON": sys.executable, "RUBRICRL_MIRROR_SERVE": str(Path(__file__).with_name(
            "mirror_serve.py")), "RUBRICRL_SERVE_ROOT": str(self.root), "RUBRICRL_SERVE_PORT": str(self.port)}

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _self_signed(folder: Path) -> str:
    """``cert.pem`` and ``key.pem`` for 127.0.0.1 in ``folder``; returns the base64 sha256 of its public key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rubricrl CDN mirror")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def launch_args(cfg: RuntimeConfig, marker: str, served: ServedFiles | None = None) -> list[str]:
    args = [
        # second wall behind the routes: no name resolves (but the mirror's server's address)
        "--host-resolver-rules=MAP * ~NOTFOUND" + (", EXCLUDE 127.0.0.1" if served is not None else ""),
        "--webrtc-ip-handling-policy=disable_non_proxied_udp", "--force-webrtc-ip-handling-policy",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio", "--autoplay-policy=no-user-gesture-required",
        f"--unsafely-treat-insecure-origin-as-secure={APP_ORIGIN}",  # crypto.subtle, clipboard... as on https
        f"--rubricrl-runtime={marker}",  # lets a test (or an operator) find this browser's processes
    ]
    if cfg.swiftshader:
        # Software WebGL: disabling WebGL would make correct three.js apps fail.
        args += ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"]
    # Composite pages in software: with full chromium and SwiftShader every page's frames otherwise go through
    # the one GPU process, which serialises the batch (measured ~1.4 -> ~2.0 apps/s at concurrency 4 on 2 cores);
    # the headless shell measures the same either way. WebGL itself still runs on SwiftShader in the GPU
    # process (tests/test_env_browser.py loads three.js).
    args.append("--disable-gpu-compositing")
    if served is not None:
        args.append(f"--ignore-certificate-errors-spki-list={served.spki}")  # the mirror's certificate only
    return args


_NETNS_WRAPPER = Path(__file__).with_name("browser-netns.sh")
# Tried in order: plain (needs CAP_SYS_ADMIN, e.g. root), then inside a new user namespace (unprivileged).
_NETNS_OPTIONS = ("--net", "--user --map-root-user --net")
_netns_found: dict[str, str | None] = {}


def netns_options() -> str | None:
    """The unshare options that give a new network namespace on this machine, or None (probed once)."""
    if "opts" not in _netns_found:
        import subprocess

        found = None
        if shutil.which("unshare"):
            for opts in _NETNS_OPTIONS:
                if subprocess.run(["unshare", *opts.split(), "--", "true"], capture_output=True).returncode == 0:
                    found = opts
                    break
        _netns_found["opts"] = found
    return _netns_found["opts"]


def sandbox_launch(cfg: RuntimeConfig, served: ServedFiles | None = None) -> dict[str, Any]:
    """Playwright launch options for the browser: inside an empty network namespace unless turned off, with the
    mirror's server (``served``) started in it first."""
    env = {"RUBRICRL_BROWSER": cfg.executable_path, "RUBRICRL_NETNS": ""}
    if served is not None:
        env.update(served.server_env())
    if cfg.network_namespace:
        netns = netns_options()
        if netns is None:
            raise ValueError("cannot start the browser in an empty network namespace here (`unshare --net` and "
                             "`unshare --user --map-root-user --net` both refused: no root and user namespaces are "
                             "off); allow one (e.g. sysctl kernel.unprivileged_userns_clone=1, or "
                             "kernel.apparmor_restrict_unprivileged_userns=0), or set env.runtime.network_namespace="
                             "false and accept that WebRTC's UDP can then reach this machine")
        env["RUBRICRL_NETNS"] = netns
    elif served is None:
        return {"executable_path": cfg.executable_path}
    return {"executable_path": str(_NETNS_WRAPPER), "env": {**os.environ, **env}}
