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

URL forms (``parse_cdn_url``): jsdelivr ``/npm/pkg@ver/path`` (and ``/+esm``), unpkg ``pkg@ver/path`` (and
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

# cdnjs library name -> (npm packages it is built from, the package folder cdnjs serves). The folder comes from
# cdnjs's own npm auto-update file map (github.com/cdnjs/packages); None where cdnjs's layout is not the
# package's (a library cdnjs builds from git, or whose layout changed across versions): files are then found
# by name, and a file not found is a gap in the mirror, not a 404.
CDNJS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "three.js": (("three",), "build"), "p5.js": (("p5",), "lib"), "mathjs": (("mathjs",), "lib/browser"),
    "d3": (("d3",), "dist"), "chart.js": (("chart.js",), "dist"), "jquery": (("jquery",), "dist"),
    "font-awesome": (("@fortawesome/fontawesome-free",), ""), "plotly.js": (("plotly.js-dist-min", "plotly.js-dist"), None),
    "mathjax": (("mathjax",), None), "marked": (("marked",), None), "p5.sound": (("p5.sound",), None),
    "gsap": (("gsap",), None), "animejs": (("animejs",), None), "anime.js": (("animejs",), None),
    "matter-js": (("matter-js",), None), "tone": (("tone",), None), "lodash.js": (("lodash",), None),
    "vue": (("vue",), None), "react": (("react",), None), "react-dom": (("react-dom",), None),
    "babel-standalone": (("@babel/standalone",), None), "alpinejs": (("alpinejs",), None),
    "howler": (("howler",), None), "canvas-confetti": (("canvas-confetti",), None), "moment.js": (("moment",), None),
    "dayjs": (("dayjs",), None), "sortable": (("sortablejs",), None), "sortablejs": (("sortablejs",), None),
    "leaflet": (("leaflet",), None), "dompurify": (("dompurify",), None), "highlight.js": (("highlight.js",), None),
    "katex": (("katex",), None), "numeric": (("numeric",), None),
}
# Aliases whose version the publisher froze: Plotly stopped updating plotly-latest at 1.58.5 (its README says so).
FROZEN = {"plotly-latest": "1.58.5"}
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
# Hosts that serve libraries: whatever they are asked and the mirror cannot answer is a gap, not the app's fault.
LIBRARY_HOSTS = {"cdn.jsdelivr.net", "unpkg.com", "www.unpkg.com", "cdnjs.cloudflare.com", "esm.sh", "esm.run",
                 "cdn.skypack.dev", "ga.jspm.io", "cdn.plot.ly", "threejs.org", "cdn.tailwindcss.com", "code.jquery.com",
                 "d3js.org", "cdn.mathjax.org", "cdn.rawgit.com", "rawcdn.githack.com", "raw.githack.com",
                 "ajax.googleapis.com", "stackpath.bootstrapcdn.com", "maxcdn.bootstrapcdn.com", "cdn.bootcdn.net"}
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
_PKG = r"(?P<pkg>@[a-z0-9][\w.-]*/[\w.-]+|[a-z0-9][\w.-]*)"
_NPM_PATH = re.compile(_PKG + r"(?:@(?P<ver>[^/]*))?(?P<path>/.*)?$", re.I)
_IMPORT = re.compile(r"""((?:\bfrom|\bimport)\s*\(?\s*)(["'])([^"':\n]+)\2""")
_PLOTLY = re.compile(r"/plotly-(?:(?P<bundle>basic|cartesian|geo|gl2d|gl3d|mapbox|finance|strict)-)?"
                     r"(?P<ver>latest|\d+\.\d+\.\d+(?:-rc\.\d+)?)(?P<min>\.min)?\.js$")


@dataclass(frozen=True)
class CdnRef:
    """What a CDN URL asks for. ``base``: the package folder the CDN's paths start in ("" the package root), a
    file the version lacks there being a 404 on the real CDN too; None: the CDN's layout is not the package's
    (the file is found by name, and a miss is a gap in the mirror)."""

    package: str
    version: str | None  # as written in the URL: "0.160.0", "4", "^3.9", "r128", None
    path: str  # inside the package, without leading slash; "" = the package's entry
    flavor: str  # "classic" | "esm" | "tailwind-play"
    base: str | None = ""
    minify: bool = False  # jsdelivr answers X.min.js with X.js minified when the package has no X.min.js
    also: tuple[str, ...] = ()  # other npm packages holding the same files (Plotly's dist and dist-min)


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


# -- URLs ---------------------------------------------------------------------------------------------------
def _npm(path: str, flavor: str, base: str | None = "", minify: bool = False) -> CdnRef | None:
    m = _NPM_PATH.match(path.lstrip("/"))
    if not m:
        return None
    sub = (m.group("path") or "").lstrip("/")
    if sub in ("+esm", "+esm/"):
        sub, flavor = "", "esm"
    return CdnRef(m.group("pkg").lower(), m.group("ver") or None, sub, flavor, base, minify)


def _cdnjs(path: str) -> CdnRef | None:
    parts = path.split("/")
    if len(parts) < 2 or not parts[0]:
        return None
    packages, base = CDNJS.get(parts[0].lower(), ((parts[0].lower(),), None))
    return CdnRef(packages[0], parts[1], "/".join(parts[2:]), "classic", base, also=packages[1:])


def _site(host: str, path: str) -> CdnRef | None:
    """The library sites that are not npm CDNs: Plotly's, three.js's, jQuery's, D3's, Tailwind's Play CDN."""
    if host == "cdn.plot.ly" and (m := _PLOTLY.match(path)):
        bundle, mini = m.group("bundle"), m.group("min") or ""
        name = "plotly.js" + (f"-{bundle}" if bundle else "") + "-dist" + ("-min" if mini else "")
        ver = m.group("ver")
        return CdnRef(name, FROZEN["plotly-latest"] if ver == "latest" else ver,
                      "plotly" + (f"-{bundle}" if bundle else "") + f"{mini}.js", "classic")
    if host == "threejs.org" and path.startswith(("/build/", "/examples/")):
        return CdnRef("three", None, path.lstrip("/"), "classic")  # the site serves the newest release
    if host == "cdn.tailwindcss.com":
        return CdnRef("@tailwindcss/browser", None, "", "tailwind-play")
    if host == "code.jquery.com" and (m := re.match(r"/jquery-(\d[\w.]*?)((?:\.slim)?(?:\.min)?\.js)$", path)):
        return CdnRef("jquery", m.group(1), f"dist/jquery{m.group(2)}", "classic")
    if host == "d3js.org" and (m := re.match(r"/d3(?:\.v(\d+))?((?:\.min)?\.js)$", path)):
        return CdnRef("d3", m.group(1), f"d3{m.group(2)}", "classic", None)
    return None


def parse_cdn_url(url: str) -> CdnRef | None:
    """Which package/version/file a CDN URL asks for, or None when the URL names no library file we know."""
    u = urlsplit(url)
    host, path, query = (u.hostname or "").lower(), u.path, u.query
    if host == "cdn.jsdelivr.net" and path.startswith("/npm/"):
        return _npm(path[len("/npm/"):], "esm" if path.endswith("/+esm") else "classic", minify=True)
    if host in ("unpkg.com", "www.unpkg.com"):
        return _npm(path, "esm" if "module" in query else "classic")
    if host in ("esm.sh", "cdn.skypack.dev", "esm.run"):
        path = re.sub(r"^/v\d+/", "/", path)  # esm.sh build prefixes (/v135/...)
        return _npm(path, "esm", base=None)  # builders resolve export subpaths: their layout is not the package's
    if host == "ga.jspm.io" and path.startswith("/npm:"):
        return _npm(path[len("/npm:"):], "esm", base=None)
    if host == "cdnjs.cloudflare.com" and path.startswith("/ajax/libs/"):
        return _cdnjs(path[len("/ajax/libs/"):])
    return _site(host, path)


# -- versions (pure) ----------------------------------------------------------------------------------------
_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?")


def version_key(v: str) -> tuple[int, ...]:
    """(major, minor, patch) of a version, for ordering (pure)."""
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def exact_version(spec: str | None, package: str = "") -> str | None:
    """The one version a spec names (``1.4.0``, ``v1.4.0``, three.js ``r128`` = ``0.128.0``), else None (pure)."""
    s = (spec or "").strip()
    if package == "three" and re.fullmatch(r"r\d+", s, re.I):
        return f"0.{s[1:]}.0"
    return s.lstrip("v=") if _SEMVER.fullmatch(s.lstrip("=")) else None


def satisfies(version: str, spec: str | None) -> bool | None:
    """Whether an installed version satisfies a range or tag as npm reads it (``3``, ``0.128``, ``^3.9.1``,
    ``~1.2``, ``>=2``, ``latest``, none; prereleases only by name); None for a form not understood (pure)."""
    if "-" in version:
        return False
    have = version_key(version) + (0, 0, 0)
    s = (spec or "").strip().lower()
    if s in ("", "latest", "*", "x"):
        return True
    m = re.fullmatch(r"(\^|~|>=)?v?(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?", s)
    if not m:
        return None
    op, parts = m.group(1) or "", [int(p) for p in m.groups()[1:] if p is not None and p != "x"]
    want = tuple(parts) + (0,) * (3 - len(parts))
    if have[:3] < want:
        return False
    if op == ">=":
        return True
    if op == "^":  # the left-most non-zero part stays
        fixed = min(next((i + 1 for i, p in enumerate(want) if p), 3), len(parts))
    elif op == "~":  # the minor stays when given, else the major
        fixed = 2 if len(parts) >= 2 else 1
    else:  # a partial version: the parts given stay
        fixed = len(parts)
    return have[:fixed] == want[:fixed]


def choose_version(installed: list[str], spec: str | None, package: str = "") -> str | None:
    """The installed version a CDN would serve for ``spec``: the exact one it names, else the newest satisfying
    the range; None when the mirror has none (pure)."""
    exact = exact_version(spec, package)
    if exact is not None:
        return exact if exact in installed else None
    ok = [v for v in installed if satisfies(v, spec)]
    return max(ok, key=version_key) if ok else None


def pin_spec(ref: CdnRef) -> str:
    """The npm spec that fills a gap for ``ref`` (``mirror add`` resolves a range to its newest version)."""
    return f"{ref.package}@{exact_version(ref.version, ref.package) or ref.version or 'latest'}"


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
