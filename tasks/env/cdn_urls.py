"""Library URLs as the CDNs read them: which package, version and file a jsdelivr, unpkg, cdnjs, esm.sh,
``cdn.plot.ly`` or ``threejs.org`` URL names (``parse_cdn_url`` -> ``CdnRef``), and the version a spec asks for
(an exact version, or the newest installed copy that satisfies a range or tag). Pure; the mirror
(``tasks/env/cdn.py``) serves what these name."""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import nodesemver

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


# Hosts that serve libraries: whatever they are asked and the mirror cannot answer is a gap, not the app's fault.
LIBRARY_HOSTS = {"cdn.jsdelivr.net", "unpkg.com", "www.unpkg.com", "cdnjs.cloudflare.com", "esm.sh", "esm.run",
                 "cdn.skypack.dev", "ga.jspm.io", "cdn.plot.ly", "threejs.org", "cdn.tailwindcss.com", "code.jquery.com",
                 "d3js.org", "cdn.mathjax.org", "cdn.rawgit.com", "rawcdn.githack.com", "raw.githack.com",
                 "ajax.googleapis.com", "stackpath.bootstrapcdn.com", "maxcdn.bootstrapcdn.com", "cdn.bootcdn.net"}


_PKG = r"(?P<pkg>@[a-z0-9][\w.-]*/[\w.-]+|[a-z0-9][\w.-]*)"


_NPM_PATH = re.compile(_PKG + r"(?:@(?P<ver>[^/]*))?(?P<path>/.*)?$", re.I)


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
    """Whether an installed version satisfies a range or tag as npm reads it (node-semver's port: ``3``,
    ``0.128``, ``^3.9.1``, ``~1.2``, ``>=2 <3``, ``1.x || 2.x``; the tag ``latest`` or none: any; prereleases only
    by a range that names one); None for a spec that is no range (another tag, a typo) (pure)."""
    s = (spec or "").strip().lower()
    if s in ("", "latest"):
        return "-" not in version  # a dist-tag's version is a release
    if nodesemver.valid_range(s, False) is None:
        return None
    return bool(nodesemver.satisfies(version, s, False))


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
