"""The CDN allowlist: serve pinned local copies of well-known libraries to sandboxed apps.

Generated apps load Chart.js, D3, three.js, Tailwind, marked, ... from CDNs, as classic scripts, ES
module imports and through import maps. The sandbox blocks the network, so a correct app would fail
for no fault of its own. This module maps such URLs to files installed at set-up from npm into
``vendor/cdn/node_modules`` (pinned in ``vendor/cdn/package.json`` + lockfile; install with
``npm ci --prefix vendor/cdn --ignore-scripts``). Everything else stays blocked and is recorded.

URL forms understood (``parse_cdn_url``): jsdelivr ``/npm/pkg@ver/path`` (and ``/+esm``), unpkg
``pkg@ver/path`` (and ``?module``), cdnjs ``/ajax/libs/<lib>/<ver>/<file>``, esm.sh / skypack /
jspm (ES modules whose imports are rewritten to absolute esm.sh URLs so they resolve here too),
``cdn.tailwindcss.com``, ``code.jquery.com``, ``d3js.org``, ``threejs.org``.

Version pins choose among installed copies of a package (npm aliases such as ``three-r128``):
exact version, else same major (same minor for 0.x), else the nearest; a copy that lacks the
requested file is skipped, so ``three.js/r128/three.min.js`` finds the r128 build. A path not in
the package is looked up by file name (cdnjs lays files out differently from npm).

Departure: ``cdn.tailwindcss.com`` (Tailwind v3 Play CDN) is served by ``@tailwindcss/browser`` v4
with a one-line shim defining ``window.tailwind`` so ``tailwind.config = {...}`` does not throw.

Run: ``CdnMirror(Path("vendor/cdn/node_modules")).resolve(url)`` -> ``Served | None``.
"""
from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

CDNJS_NAMES = {
    "three.js": "three", "chart.js": "chart.js", "d3": "d3", "marked": "marked", "p5.js": "p5", "gsap": "gsap",
    "animejs": "animejs", "anime.js": "animejs", "matter-js": "matter-js", "tone": "tone", "lodash.js": "lodash",
    "jquery": "jquery", "font-awesome": "@fortawesome/fontawesome-free", "vue": "vue", "react": "react",
    "react-dom": "react-dom", "babel-standalone": "@babel/standalone", "alpinejs": "alpinejs", "howler": "howler",
    "canvas-confetti": "canvas-confetti", "moment.js": "moment", "dayjs": "dayjs", "sortable": "sortablejs",
    "sortablejs": "sortablejs", "leaflet": "leaflet", "dompurify": "dompurify", "highlight.js": "highlight.js",
    "katex": "katex", "mathjs": "mathjs",
}
MIME = {".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript", ".css": "text/css",
        ".json": "application/json", ".map": "application/json", ".wasm": "application/wasm",
        ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf", ".otf": "font/otf", ".eot":
        "application/vnd.ms-fontobject", ".svg": "image/svg+xml", ".png": "image/png", ".gif": "image/gif",
        ".jpg": "image/jpeg", ".txt": "text/plain"}
TAILWIND_SHIM = b"window.tailwind = window.tailwind || {config: {}};\n"
_PKG = r"(?P<pkg>@[a-z0-9][\w.-]*/[\w.-]+|[a-z0-9][\w.-]*)"
_NPM_PATH = re.compile(_PKG + r"(?:@(?P<ver>[^/]*))?(?P<path>/.*)?$", re.I)
_IMPORT = re.compile(r"""((?:\bfrom|\bimport)\s*\(?\s*)(["'])([^"':\n]+)\2""")


@dataclass(frozen=True)
class CdnRef:
    package: str
    version: str | None  # as written in the URL: "0.160.0", "4", "^3.9", "r128", None
    path: str  # inside the package, without leading slash; "" = the package's entry
    flavor: str  # "classic" | "esm" | "tailwind-play"


@dataclass(frozen=True)
class Served:
    body: bytes
    content_type: str
    file: str  # the local file, for the record


def _npm(path: str, flavor: str) -> CdnRef | None:
    m = _NPM_PATH.match(path.lstrip("/"))
    if not m:
        return None
    sub = (m.group("path") or "").lstrip("/")
    if sub in ("+esm", "+esm/"):
        sub, flavor = "", "esm"
    return CdnRef(m.group("pkg").lower(), m.group("ver") or None, sub, flavor)


def parse_cdn_url(url: str) -> CdnRef | None:
    """Which package/version/file a CDN URL asks for, or None when the host is not on the allowlist."""
    u = urlsplit(url)
    host, path, query = u.hostname or "", u.path, u.query
    if host == "cdn.jsdelivr.net" and path.startswith("/npm/"):
        return _npm(path[len("/npm/"):], "esm" if path.endswith("/+esm") else "classic")
    if host in ("unpkg.com", "www.unpkg.com"):
        return _npm(path, "esm" if "module" in query else "classic")
    if host in ("esm.sh", "cdn.skypack.dev", "esm.run"):
        path = re.sub(r"^/v\d+/", "/", path)  # esm.sh build prefixes (/v135/...)
        return _npm(path, "esm")
    if host == "ga.jspm.io" and path.startswith("/npm:"):
        return _npm(path[len("/npm:"):], "esm")
    if host == "cdnjs.cloudflare.com" and path.startswith("/ajax/libs/"):
        parts = path[len("/ajax/libs/"):].split("/")
        name = CDNJS_NAMES.get(parts[0].lower())
        if not name or len(parts) < 2:
            return None
        return CdnRef(name, parts[1], "/".join(parts[2:]), "classic")
    if host == "cdn.tailwindcss.com":
        return CdnRef("@tailwindcss/browser", None, "", "tailwind-play")
    if host == "code.jquery.com":
        m = re.match(r"/jquery-(\d[\w.]*?)(?:\.slim)?(?:\.min)?\.js$", path)
        return CdnRef("jquery", m.group(1), "", "classic") if m else None
    if host == "d3js.org":
        m = re.match(r"/d3(?:\.v(\d+))?(?:\.min)?\.js$", path)
        return CdnRef("d3", m.group(1), "", "classic") if m else None
    if host == "threejs.org" and path.startswith("/build/"):
        return CdnRef("three", None, path.lstrip("/"), "classic")
    return None


def _vtuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def rank_versions(installed: list[str], spec: str | None, package: str = "") -> list[str]:
    """Installed versions in order of preference for a version spec (pure)."""
    if not installed:
        return []
    newest_first = sorted(installed, key=_vtuple, reverse=True)
    if not spec or spec in ("latest", "next", "*"):
        return newest_first
    spec = spec.strip().lstrip("^~=v")
    if package == "three" and re.fullmatch(r"r\d+", spec, re.I):
        spec = f"0.{spec[1:]}.0"  # three.js revisions: r128 is 0.128.0
    want = _vtuple(spec)
    if not want:
        return newest_first

    def key(v: str) -> tuple[int, int, int]:
        have = _vtuple(v) + (0, 0, 0)
        exact = 0 if have[: len(want)] == want else 1
        series = 0 if (have[:2] == (want + (0,))[:2] if want[0] == 0 else have[0] == want[0]) else 1
        dist = sum(abs(a - b) * w for a, b, w in zip(have, want + (0, 0), (10**6, 10**3, 1)))
        return exact, series, dist

    return sorted(installed, key=key)


class CdnMirror:
    """Resolve CDN URLs to files under ``root`` (a node_modules folder); thread-safe, index built once."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._index: dict[str, dict[str, Path]] | None = None
        self._lock = threading.Lock()
        self._names: dict[Path, dict[str, list[str]]] = {}
        self._cache: dict[str, Served | None] = {}

    @property
    def available(self) -> bool:
        return self.root.is_dir()

    def index(self) -> dict[str, dict[str, Path]]:
        """package name -> {version: directory}, from each installed package.json (aliases included)."""
        with self._lock:
            if self._index is None:
                idx: dict[str, dict[str, Path]] = {}
                dirs = [d for d in self.root.glob("*") if not d.name.startswith("@")] + list(self.root.glob("@*/*"))
                for d in dirs:
                    try:
                        meta = json.loads((d / "package.json").read_text())
                        idx.setdefault(meta["name"].lower(), {})[meta["version"]] = d
                    except (OSError, ValueError, KeyError):
                        continue
                self._index = idx
            return self._index

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
        """Find a file by base name inside a package (cdnjs layouts differ from npm's)."""
        if pkg_dir not in self._names:
            names: dict[str, list[str]] = {}
            for dirpath, dirnames, filenames in os.walk(pkg_dir):
                dirnames[:] = [d for d in dirnames if d != "node_modules"]
                for f in filenames:
                    names.setdefault(f.lower(), []).append(os.path.relpath(os.path.join(dirpath, f), pkg_dir))
            self._names[pkg_dir] = names
        hits = self._names[pkg_dir].get(name.lower(), [])
        rank = lambda p: (not p.split(os.sep)[0] in ("dist", "build", "umd", "css", "webfonts"), p.count(os.sep), p)  # noqa: E731
        return sorted(hits, key=rank)[0] if hits else None

    def _file_in(self, pkg_dir: Path, ref: CdnRef) -> str | None:
        path = ref.path
        if not path:
            return self._entry(pkg_dir, ref.flavor)
        for cand in (path, path + ".js", path + "/index.js", path + ".mjs"):
            if (pkg_dir / cand).is_file():
                return cand
        if path.endswith(".min.js") and (pkg_dir / path.replace(".min.js", ".js")).is_file():
            return path.replace(".min.js", ".js")
        name = path.rsplit("/", 1)[-1]
        found = self._by_name(pkg_dir, name) or self._by_name(pkg_dir, name.replace(".min.", "."))
        if found or not name.endswith(".js"):
            return found
        # The library's own bundle under another build name (cdnjs "chart.umd.min.js" for Chart.js 4).
        stem = re.sub(r"(\.(min|umd|bundle|prod|production|global|browser))*\.js$", "", name.lower())
        base = re.sub(r"(\.js|js)$", "", ref.package.rsplit("/", 1)[-1].lower())
        return self._entry(pkg_dir, ref.flavor) if stem.strip(".-") in (base, ref.package.lower()) else None

    def resolve(self, url: str) -> Served | None:
        """The local bytes for an allowlisted CDN URL, or None (the request stays blocked)."""
        with self._lock:
            if url in self._cache:
                return self._cache[url]
        served = self._resolve(url)
        with self._lock:
            if len(self._cache) >= 512:
                self._cache.pop(next(iter(self._cache)))
            self._cache[url] = served
        return served

    def _resolve(self, url: str) -> Served | None:
        ref = parse_cdn_url(url)
        if ref is None or not self.available:
            return None
        versions = self.index().get(ref.package, {})
        for ver in rank_versions(list(versions), ref.version, ref.package):
            pkg_dir = versions[ver]
            rel = self._file_in(pkg_dir, ref)
            if not rel or not (pkg_dir / rel).is_file():
                continue
            # An ES module's own imports resolve against its esm.sh address (relative ones included).
            return self._serve(pkg_dir / rel, ref, f"https://esm.sh/{ref.package}@{ver}/{rel}")
        return None

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
