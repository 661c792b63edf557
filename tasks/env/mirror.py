"""What a folder of apps needs from the CDN mirror, and pinning what it lacks (``rubricrl mirror scan|add``).

``scan(paths, mirror)`` reads apps (``.html``/``.htm`` files, or responses as ``.txt`` files whose HTML
application is extracted as the environment extracts it), lists the library URLs each one loads (script and
stylesheet tags, ES imports, import maps, library URLs written in strings) and resolves each through the
mirror as the sandbox would (``tasks.env.cdn``): served, not_found (the real CDN answers 404 too), a gap (the
mirror lacks it; ``spec`` says what to pin) or refused on purpose. Counts are per app: a URL two apps load
counts twice. Coverage is the share of library uses served among those a real CDN would serve (served + gaps).

``add(specs, prefix)`` pins libraries into the mirror's npm project: each ``name@version`` (a range or tag is
resolved to its newest published version, as a CDN resolves it; a version the registry does not have is refused
before anything is installed) becomes the alias ``name-version`` (``npm:name@version``),
installed with ``npm install --save-exact``, so npm edits package.json and the lockfile and installs it. The
registry is reached here, at set-up time, never at score time.

Run: ``scan([Path("apps")], CdnMirror(root))`` -> ``ScanReport``; ``add(["p5@1.4.0"], Path("vendor/cdn"))``.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable
from urllib.parse import urljoin, urlsplit

from tasks.env.cdn import OUTCOMES, REFUSED_HOSTS, CdnMirror
from tasks.env.cdn_urls import LIBRARY_HOSTS, choose_version, exact_version, version_key
from tasks.env.extract import extract_html

APP_SUFFIXES = (".html", ".htm", ".txt")
_QUOTED_URL = re.compile(r"""["'`]((?:https?:)?//[^"'`\s<>]+)["'`]""", re.I)
_LIBRARY_PATH = re.compile(r"\.(m?js|css)$", re.I)
_IMPORTMAP = re.compile(r"<script[^>]*type\s*=\s*[\"']importmap[\"'][^>]*>(.*?)</script>", re.I | re.S)
_BARE_IMPORT = re.compile(r"""(?:\bfrom|\bimport)\s*\(?\s*["']([^"'./][^"':]*)["']""")
_SPEC = re.compile(r"(?P<name>@[a-z0-9][\w.-]*/[\w.-]+|[a-z0-9][\w.-]*)@(?P<ver>[^\s@]+)$", re.I)


def _absolute(url: str) -> str:
    return "https:" + url if url.startswith("//") else url


def _is_library(url: str) -> bool:
    u = urlsplit(url)
    host = (u.hostname or "").lower()
    if not host or u.path in ("", "/"):  # a bare host (a preconnect hint) loads nothing
        return False
    return (host in LIBRARY_HOSTS or host in REFUSED_HOSTS or _LIBRARY_PATH.search(u.path) is not None)


def _mapped_imports(html: str) -> list[str]:
    """URLs that bare ES imports reach through the page's import maps (longest prefix wins, as browsers do)."""
    imports: dict[str, str] = {}
    for block in _IMPORTMAP.findall(html):
        try:
            got = json.loads(block).get("imports") or {}
        except (ValueError, AttributeError):
            continue
        imports.update({k: v for k, v in got.items() if isinstance(v, str)})
    out = []
    for spec in _BARE_IMPORT.findall(html):
        keys = [k for k in imports if spec == k or (k.endswith("/") and spec.startswith(k))]
        if keys:
            k = max(keys, key=len)
            out.append(_absolute(imports[k] if spec == k else urljoin(imports[k], spec[len(k):])))
    return out


def library_urls(html: str) -> list[str]:
    """The library URLs an app loads, in order of first appearance, each once (pure)."""
    found = [_absolute(m.group(1)) for m in _QUOTED_URL.finditer(html)] + _mapped_imports(html)
    seen: dict[str, None] = {}
    for url in found:
        if _is_library(url) and not url.endswith("/"):
            seen.setdefault(url, None)
    return list(seen)


def app_files(paths: Iterable[Path]) -> list[Path]:
    """The app files under ``paths`` (files as given, folders searched recursively), sorted."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in APP_SUFFIXES)
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder; give folders of .html apps or .txt responses")
    return out


def app_html(path: Path) -> str | None:
    """The HTML application of a file: the file itself (.html), or the one extracted from a response (.txt)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        return text
    ex = extract_html(text)
    return ex.html if ex else None


@dataclass
class UrlUse:
    url: str
    apps: int
    outcome: str
    reason: str
    spec: str | None


@dataclass
class ScanReport:
    apps: int = 0
    apps_without_html: int = 0
    urls: list[UrlUse] = field(default_factory=list)  # most used first

    def uses(self, outcome: str) -> int:
        return sum(u.apps for u in self.urls if u.outcome == outcome)

    def coverage(self) -> float | None:
        """Served uses among those a real CDN would serve (served + gaps); None when there are none."""
        served, gaps = self.uses("served"), self.uses("environment_gap")
        return served / (served + gaps) if served + gaps else None

    def gap_specs(self) -> list[tuple[str, int]]:
        """(npm spec, app uses) of the gaps a `mirror add` can fill, most used first."""
        c: Counter = Counter()
        for u in self.urls:
            if u.outcome == "environment_gap" and u.spec:
                c[u.spec] += u.apps
        return c.most_common()

    def to_dict(self) -> dict:
        return {"apps": self.apps, "apps_without_html": self.apps_without_html, "coverage": self.coverage(),
                "uses": {o: self.uses(o) for o in OUTCOMES}, "gap_specs": self.gap_specs(),
                "urls": [u.__dict__ for u in self.urls]}


def scan_htmls(htmls: Iterable[str | None], mirror: CdnMirror) -> ScanReport:
    """Resolve every library URL of every app through ``mirror``; ``None`` counts an app without HTML."""
    report, uses = ScanReport(), Counter[str]()
    for html in htmls:
        report.apps += 1
        if html is None:
            report.apps_without_html += 1
            continue
        uses.update(library_urls(html))
    for url, n in uses.most_common():
        kind = "stylesheet" if urlsplit(url).path.lower().endswith(".css") else "script"
        res = mirror.resolve(url, kind)
        report.urls.append(UrlUse(url, n, res.outcome, res.reason, res.spec))
    return report


def scan(paths: Iterable[Path], mirror: CdnMirror) -> ScanReport:
    return scan_htmls((app_html(f) for f in app_files(paths)), mirror)


def format_report(report: ScanReport, show: tuple[str, ...] = ("environment_gap",)) -> str:
    """The scan as a user reads it: the URLs of the outcomes in ``show`` with their counts, then the totals."""
    lines = [f"{u.apps:>6}  {u.outcome:<15}  {u.url}" + (f"  (pin: {u.spec})" if u.spec else f"  ({u.reason})")
             for u in report.urls if u.outcome in show]
    cov = report.coverage()
    lines.append(f"{report.apps} apps ({report.apps_without_html} without an HTML application); library uses: "
                 + ", ".join(f"{o} {report.uses(o)}" for o in OUTCOMES)
                 + f"; coverage {'n/a' if cov is None else f'{cov:.1%}'} (served of served + gaps)")
    specs = [s for s, _ in report.gap_specs()]
    if specs:
        lines.append("pin the gaps with: rubricrl mirror add " + " ".join(specs))
    return "\n".join(lines)


# -- add ---------------------------------------------------------------------------------------------------
def parse_spec(spec: str) -> tuple[str, str]:
    """(name, version or range) of ``name@version``; ValueError naming the form otherwise."""
    m = _SPEC.match(spec.strip())
    if not m:
        raise ValueError(f"{spec!r} is not an npm spec; give name@version, e.g. p5@1.4.0, @scope/name@2.0.0 or "
                         "mathjax@3 (a range is pinned at its newest version)")
    return m.group("name").lower(), m.group("ver")


def alias_name(name: str, version: str) -> str:
    """The npm alias a pinned version is installed under (``p5-1.4.0``, ``@scope/lib-2.0.0``)."""
    return f"{name}-{version}"


def _npm(args: list[str], prefix: Path) -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is missing: apt-get install -y npm (scripts/setup-system.sh)")
    proc = subprocess.run([npm, *args, "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"npm {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-1500:]}")
    return proc.stdout


def published_versions(name: str, prefix: Path) -> list[str]:
    """Every version of ``name`` the registry has (set-up time only)."""
    out = _npm(["view", name, "versions", "--json"], prefix).strip()
    versions = json.loads(out) if out else []
    return [versions] if isinstance(versions, str) else list(versions)


def resolve_specs(parsed: list[tuple[str, str]], prefix: Path) -> list[tuple[str, str]]:
    """(name, exact version) per spec, as a CDN reads it (an exact version, or a range's newest); ValueError
    naming every spec the registry cannot satisfy, before anything is installed."""
    published = {name: published_versions(name, prefix) for name in dict.fromkeys(n for n, _ in parsed)}
    out, bad = [], []
    for name, spec in parsed:
        version = choose_version(published[name], spec, name)
        if version is None:
            near = sorted(published[name], key=lambda v: abs(_distance(v, exact_version(spec, name) or "0")))[:3]
            bad.append(f"{name}@{spec} (published near it: {', '.join(near) or 'none'})")
        else:
            out.append((name, version))
    if bad:
        raise ValueError("the registry has no " + "; no ".join(bad) + ": a CDN answers these with 404 too; "
                         "drop them or give a published version")
    return out


def _distance(a: str, b: str) -> int:
    pa, pb = (version_key(x) + (0, 0, 0) for x in (a, b))
    return sum((x - y) * w for x, y, w in zip(pa, pb, (10**6, 10**3, 1)))


def add(specs: list[str], prefix: Path) -> list[str]:
    """Pin ``specs`` into the npm project at ``prefix`` (package.json + lockfile + install); returns the aliases
    added (a version already installed under its own name or an alias is skipped)."""
    if not (prefix / "package.json").is_file():
        raise FileNotFoundError(f"{prefix / 'package.json'} is missing: the mirror's npm project lives there "
                                "(vendor/cdn); point env.runtime.cdn_dir at its node_modules")
    parsed = [parse_spec(s) for s in specs]  # every spec is checked before npm installs anything
    installed = CdnMirror(prefix / "node_modules").index()
    todo: dict[str, str] = {}
    for name, version in resolve_specs(parsed, prefix):
        if version not in installed.get(name, {}):
            todo[alias_name(name, version)] = f"npm:{name}@{version}"
    if todo:
        _npm(["install", "--save-exact", "--ignore-scripts", *(f"{a}@{t}" for a, t in todo.items())], prefix)
    return list(todo)
