"""The CDN mirror: serve a sandboxed app the exact library file a real CDN would, from local npm copies.

Generated apps load p5, three.js, Plotly, MathJax, Chart.js, ... from CDNs, as classic scripts, ES module
imports and through import maps. The sandbox blocks the network, so a correct app would fail for no fault
of its own. This module maps such URLs to files installed at set-up from npm into ``vendor/cdn/node_modules``
(pinned in ``vendor/cdn/package.json`` + lockfile; ``npm ci --prefix vendor/cdn --ignore-scripts``; several
versions of one package through npm aliases such as ``"p5-1.4.0": "npm:p5@1.4.0"``, indexed by each installed
package.json's name and version). ``rubricrl mirror scan DIR`` lists what a folder of apps needs that the
mirror lacks; ``rubricrl mirror add p5@1.4.0`` pins it (docs/sandbox.md).

Versions, as the CDNs serve them: a URL naming an exact version (``p5@1.4.0``, cdnjs ``mathjs/11.5.0/math.js``,
three.js ``r128``) gets that version's file or nothing, never a neighbour's; a range or tag (``mathjax@3``,
``^3.9``, ``latest``, none) gets the newest installed copy that satisfies it (a real CDN's newest may be newer).
Frozen aliases are facts: ``cdn.plot.ly/plotly-latest.min.js`` is Plotly 1.58.5 (``FROZEN``).

Every request gets one ``Resolution`` (``CdnMirror.resolve(url, resource_type)``):

- ``served``: the bytes;
- ``not_found``: the version is installed and the CDN's copy of it has no such file, so the real CDN answers
  404 as well (the app's own problem; the route answers 404 too);
- ``environment_gap``: a library the mirror lacks (a package or version not installed, an unknown library
  host, a CDN layout not known here): the app might work in a user's browser, so when it fails after such a
  request the environment cannot judge it (``RuntimeEvidence.environment_gaps``);
- ``refused``: refused on purpose (``REFUSED_HOSTS``: fonts, trackers, a polyfill service; and by resource type:
  network APIs, images and media, other sites' pages): an app that depends on one has a defect offline.

URL forms (``tasks/env/cdn_urls.py``, ``parse_cdn_url``): jsdelivr ``/npm/pkg@ver/path`` (and ``/+esm``), unpkg ``pkg@ver/path`` (and
``?module``), cdnjs ``/ajax/libs/<lib>/<ver>/<file>``, esm.sh / skypack / jspm (ES modules whose imports are
rewritten to absolute esm.sh URLs so they resolve here too), ``cdn.plot.ly``, ``threejs.org``,
``cdn.tailwindcss.com``, ``code.jquery.com``, ``d3js.org``.

Departure: ``cdn.tailwindcss.com`` (Tailwind v3 Play CDN) is served by ``@tailwindcss/browser`` v4 with a
one-line shim defining ``window.tailwind`` so ``tailwind.config = {...}`` does not throw.

Run: ``CdnMirror(Path("vendor/cdn/node_modules")).resolve(url)`` -> ``Resolution``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from schemas.config.env import RuntimeConfig
from tasks.env.cdn_urls import LIBRARY_HOSTS, CdnRef, choose_version, exact_version, parse_cdn_url, pin_spec

# Refused on purpose, whatever the resource type: the reason goes into the record (docs/sandbox.md says why).
REFUSED_HOSTS = {
    **dict.fromkeys(("fonts.googleapis.com", "fonts.gstatic.com", "use.typekit.net", "fonts.bunny.net",
                     "fonts.cdnfonts.com"), "web fonts: the page falls back to a local font"),
    **dict.fromkeys(("polyfill.io", "cdn.polyfill.io"), "a polyfill service for old browsers: this Chromium needs "
                    "none, and the host was taken over in 2024"),
    **dict.fromkeys(("www.googletagmanager.com", "www.google-analytics.com", "google-analytics.com",
                     "ssl.google-analytics.com", "stats.g.doubleclick.net", "static.hotjar.com", "connect.facebook.net",
                     "cdn.segment.com", "plausible.io", "www.clarity.ms", "cdn.mxpnl.com"),
                    "analytics and tracking: no app needs them to run"),
}
# Requests by what they fetch (Playwright's resource types), refused on purpose: (types, reason).
REFUSED_TYPES = ((("fetch", "xhr", "eventsource", "websocket", "ping"), "a network API the app has no business "
                  "calling offline"),
                 (("image", "media", "font", "texttrack", "manifest"), "content from the network (images, media, "
                  "fonts): the sandbox serves libraries only"),
                 (("document",), "another site's page"))
_LIBRARY_FILE = re.compile(r"\.(m?js|css)$", re.I)
MIME = {".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript", ".css": "text/css",
        ".json": "application/json", ".map": "application/json", ".wasm": "application/wasm",
        ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf", ".otf": "font/otf", ".eot":
        "application/vnd.ms-fontobject", ".svg": "image/svg+xml", ".png": "image/png", ".gif": "image/gif",
        ".jpg": "image/jpeg", ".txt": "text/plain"}
TAILWIND_SHIM = b"window.tailwind = window.tailwind || {config: {}};\n"
OUTCOMES = ("served", "not_found", "environment_gap", "refused")
_IMPORT = re.compile(r"""((?:\bfrom|\bimport)\s*\(?\s*)(["'])([^"':\n]+)\2""")


@dataclass(frozen=True)
class Served:
    body: bytes
    content_type: str
    file: str  # the local file, for the record


@dataclass(frozen=True)
class Resolution:
    """What the sandbox does with one request (``OUTCOMES``)."""

    outcome: str
    served: Served | None = None
    reason: str = ""
    spec: str | None = None  # what `rubricrl mirror add` pins to fill a gap ("p5@1.4.0", "mathjax@3")


def unserved(url: str, resource_type: str) -> tuple[str, str]:
    """(outcome, reason) of a request no mirror file answers, from its host and resource type (pure)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in REFUSED_HOSTS:
        return "refused", REFUSED_HOSTS[host]
    if host in LIBRARY_HOSTS:
        return "environment_gap", f"a library the mirror does not have ({host})"
    if resource_type in ("script", "stylesheet") or _LIBRARY_FILE.search(urlsplit(url).path):
        return "environment_gap", f"a library from a host the mirror does not know ({host or url[:40]})"
    for types, why in REFUSED_TYPES:
        if resource_type in types:
            return "refused", why
    return "refused", f"a {resource_type or 'request'} outside the sandbox"


def mirror_fingerprint(root: Path | None) -> str | None:
    """Which mirror is installed at ``root`` (npm's record of what it installed): a reward depends on it."""
    if root is None:
        return None
    try:
        return hashlib.sha256((Path(root) / ".package-lock.json").read_bytes()).hexdigest()[:16]
    except OSError:
        return None


# -- the mirror ---------------------------------------------------------------------------------------------
class CdnMirror:
    """Resolve CDN URLs to files under ``root`` (a node_modules folder); thread-safe, index built once."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._index: dict[str, dict[str, Path]] | None = None
        self._lock = threading.Lock()
        self._names: dict[Path, dict[str, list[str]]] = {}
        self._cache: dict[tuple[str, str], Resolution] = {}

    @property
    def available(self) -> bool:
        return self.root.is_dir()

    def index(self) -> dict[str, dict[str, Path]]:
        """package name -> {version: directory}, from each installed package.json (aliases included)."""
        with self._lock:
            if self._index is None:
                idx: dict[str, dict[str, Path]] = {}
                dirs = [d for d in self.root.glob("*") if not d.name.startswith("@")] + list(self.root.glob("@*/*"))
                for d in sorted(dirs):
                    try:
                        meta = json.loads((d / "package.json").read_text())
                        idx.setdefault(meta["name"].lower(), {})[meta["version"]] = d
                    except (OSError, ValueError, KeyError):
                        continue
                self._index = idx
            return self._index

    def resolve(self, url: str, resource_type: str = "script") -> Resolution:
        """What the sandbox answers ``url`` with (cached per URL and resource type)."""
        key = (url, resource_type)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        res = self._resolve(url, resource_type)
        with self._lock:
            if len(self._cache) >= 512:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = res
        return res

    def _resolve(self, url: str, resource_type: str) -> Resolution:
        host = (urlsplit(url).hostname or "").lower()
        ref = parse_cdn_url(url) if host not in REFUSED_HOSTS else None
        if ref is None or not self.available:
            outcome, reason = unserved(url, resource_type)
            return Resolution(outcome, reason=reason)
        lacking = None  # an installed version whose CDN copy has no such file
        for package in (ref.package, *ref.also):
            versions = self.index().get(package, {})
            ver = choose_version(list(versions), ref.version, package)
            if ver is None:
                continue
            pkg_dir = versions[ver]
            rel = self._file_in(pkg_dir, ref)
            if rel is not None:
                # An ES module's own imports resolve against its esm.sh address (relative ones included).
                return Resolution("served", self._serve(pkg_dir / rel, ref, f"https://esm.sh/{package}@{ver}/{rel}"))
            if self._authoritative(pkg_dir, ref):
                lacking = lacking or f"{package}@{ver} has no {ref.path or 'entry file'} where this CDN serves it from"
        if lacking:
            return Resolution("not_found", reason=lacking)
        want = exact_version(ref.version, ref.package) or ref.version or "latest"
        return Resolution("environment_gap", reason=f"the mirror has no {ref.package}@{want}", spec=pin_spec(ref))

    def _authoritative(self, pkg_dir: Path, ref: CdnRef) -> bool:
        """A miss means the real CDN has no such file: its layout is this package's (the folder it serves exists)."""
        return ref.base is not None and (pkg_dir / ref.base).is_dir()

    def _entry(self, pkg_dir: Path, flavor: str) -> str | None:
        meta = json.loads((pkg_dir / "package.json").read_text())
        fields = ["module", "browser", "unpkg", "jsdelivr", "main"] if flavor == "esm" else \
            ["unpkg", "jsdelivr", "browser", "main"]
        exp = meta.get("exports")
        if flavor == "esm" and isinstance(exp, dict):
            dot = exp.get(".", exp)
            cand = dot.get("import") or dot.get("browser") or dot.get("default") if isinstance(dot, dict) else dot
            if isinstance(cand, dict):
                cand = cand.get("default") or cand.get("browser")
            if isinstance(cand, str):
                return cand.lstrip("./")
        for f in fields:
            if isinstance(meta.get(f), str):
                return meta[f].lstrip("./")
        return "index.js" if (pkg_dir / "index.js").exists() else None

    def _by_name(self, pkg_dir: Path, name: str) -> str | None:
        """Find a file by base name inside a package (a CDN whose layout is not the package's)."""
        if pkg_dir not in self._names:
            names: dict[str, list[str]] = {}
            for dirpath, dirnames, filenames in os.walk(pkg_dir):
                dirnames[:] = [d for d in dirnames if d != "node_modules"]
                for f in filenames:
                    names.setdefault(f.lower(), []).append(os.path.relpath(os.path.join(dirpath, f), pkg_dir))
            self._names[pkg_dir] = names
        hits = self._names[pkg_dir].get(name.lower(), [])
        rank = lambda p: (not p.split(os.sep)[0] in ("dist", "build", "umd", "lib", "css", "webfonts"), p.count(os.sep), p)  # noqa: E731
        return sorted(hits, key=rank)[0] if hits else None

    def _file_in(self, pkg_dir: Path, ref: CdnRef) -> str | None:
        """The package file the CDN answers ``ref`` with, or None."""
        if not ref.path:
            rel = self._entry(pkg_dir, ref.flavor)
            return rel if rel and (pkg_dir / rel).is_file() else None
        base = ref.base if self._authoritative(pkg_dir, ref) else ""
        path = f"{base}/{ref.path}" if base else ref.path
        for cand in (path, path + ".js", path + "/index.js", path + ".mjs"):
            if (pkg_dir / cand).is_file():
                return cand
        if ref.minify and re.search(r"\.min\.(js|css)$", path):
            plain = re.sub(r"\.min\.(js|css)$", r".\1", path)
            if (pkg_dir / plain).is_file():
                return plain
        if base or self._authoritative(pkg_dir, ref):
            return None
        name = ref.path.rsplit("/", 1)[-1]
        found = self._by_name(pkg_dir, name) or self._by_name(pkg_dir, name.replace(".min.", "."))
        if found or not name.endswith(".js"):
            return found
        # The library's own bundle under another build name (cdnjs "chart.umd.min.js" for Chart.js 4).
        stem = re.sub(r"(\.(min|umd|bundle|prod|production|global|browser))*\.js$", "", name.lower())
        short = re.sub(r"(\.js|js)$", "", ref.package.rsplit("/", 1)[-1].lower())
        return self._entry(pkg_dir, ref.flavor) if stem.strip(".-") in (short, ref.package.lower()) else None

    def _serve(self, file: Path, ref: CdnRef, base_url: str) -> Served:
        body = file.read_bytes()
        ctype = MIME.get(file.suffix.lower(), "application/octet-stream")
        if ref.flavor == "tailwind-play":
            body = TAILWIND_SHIM + body
        elif ref.flavor == "esm" and ctype == "text/javascript":
            body = rewrite_imports(body.decode("utf-8", "replace"), base_url).encode("utf-8")
        return Served(body, ctype, str(file))


def rewrite_imports(source: str, base_url: str) -> str:
    """Point an ES module's imports at esm.sh URLs, as esm.sh itself does (pure): bare specifiers
    (``from "three"``) become ``https://esm.sh/three``; relative ones resolve against ``base_url``."""
    def sub(m: re.Match[str]) -> str:
        spec = m.group(3)
        target = urljoin(base_url, spec) if spec.startswith((".", "/")) else f"https://esm.sh/{spec}"
        return f"{m.group(1)}{m.group(2)}{target}{m.group(2)}"

    return _IMPORT.sub(sub, source)


def configured_mirror(cfg: RuntimeConfig) -> CdnMirror | None:
    """The CDN mirror, resolved against the project; missing, it fails loudly (every CDN app would fail)."""
    root = cfg.cdn_root()
    if root is None:
        return None
    mirror = CdnMirror(root)
    if not mirror.available:
        raise ValueError(f"the CDN mirror is missing: env.runtime.cdn_dir={cfg.cdn_dir} resolves to {root}, which is "
                         "not a folder. Install it with `npm ci --prefix vendor/cdn --ignore-scripts` (part of `make "
                         "setup`), point env.runtime.cdn_dir at an installed node_modules, or set env.runtime.cdn_dir "
                         "to null to run without it (apps that load libraries from CDNs then fail)")
    return mirror
