"""`rubricrl mirror scan` (which library URLs a folder of apps loads, and what the sandbox does with each) and
`rubricrl mirror add` (pins through the real npm client, against a fake registry on 127.0.0.1)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.env.cdn import CdnMirror
from tasks.env.mirror import library_urls, parse_spec
from fakes.fake_npm import FakeNpm

REPO = Path(__file__).resolve().parent.parent
MIRROR = REPO / "vendor/cdn/node_modules"
needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason="npm ci --prefix vendor/cdn --ignore-scripts")
needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm (apt-get install -y npm)")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rubricrl.cli", "mirror", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_library_urls_an_app_loads():
    html = """<html><head>
<link rel="preconnect" href="https://cdn.jsdelivr.net">
<link rel="stylesheet" href="//cdnjs.cloudflare.com/ajax/libs/font-awesome/6.4.0/css/all.min.css">
<script src="https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js"></script>
<script src="https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js"></script>
<script type="importmap">{"imports": {"three": "https://unpkg.com/three@0.160.0/build/three.module.js",
  "three/addons/": "https://unpkg.com/three@0.160.0/examples/jsm/"}}</script>
</head><body><img src="https://images.example.net/logo.png">
<script type="module">import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
const s = document.createElement('script'); s.src = 'https://cdn.plot.ly/plotly-2.27.0.min.js';</script>
</body></html>"""
    assert library_urls(html) == [
        "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.4.0/css/all.min.css",
        "https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js",
        "https://unpkg.com/three@0.160.0/build/three.module.js",
        "https://cdn.plot.ly/plotly-2.27.0.min.js",
        "https://unpkg.com/three@0.160.0/examples/jsm/controls/OrbitControls.js",
    ]  # the preconnect hint, the image and the import map's folder load no library


@pytest.mark.parametrize("spec, expect", [("p5@1.4.0", ("p5", "1.4.0")), ("@scope/lib@^2", ("@scope/lib", "^2")),
                                          ("mathjax@3", ("mathjax", "3"))])
def test_specs(spec, expect):
    assert parse_spec(spec) == expect


@pytest.mark.parametrize("spec", ["p5", "p5@", "https://x.org/p5.js"])
def test_a_spec_without_a_version_is_refused_with_the_form(spec):
    with pytest.raises(ValueError, match="name@version"):
        parse_spec(spec)


@needs_mirror
def test_scan_counts_what_a_folder_of_apps_needs(tmp_path):
    apps = tmp_path / "apps"
    apps.mkdir()
    gap = "https://cdn.jsdelivr.net/npm/three@0.158.1/build/three.min.js"
    (apps / "a.html").write_text(f"""<html><head>
<script src="https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js"></script>
<script src="{gap}"></script>
<script src="https://cdn.jsdelivr.net/npm/three@0.150.0/examples/js/controls/OrbitControls.js"></script>
<link href="https://fonts.googleapis.com/css2?family=Inter" rel="stylesheet"></head><body></body></html>""")
    (apps / "b.txt").write_text(f"Here is the app:\n```html\n<html><body><script src=\"{gap}\"></script></body></html>\n```\n")
    (apps / "c.txt").write_text("no application in this response")
    p = cli("scan", str(apps))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["2", "environment_gap", gap, "(pin:", "three@0.158.1)"]  # two apps need it
    assert "3 apps (1 without an HTML application)" in p.stdout
    assert "served 1, not_found 1, environment_gap 2, refused 1" in p.stdout and "coverage 33.3%" in p.stdout
    assert lines[-1] == "pin the gaps with: rubricrl mirror add three@0.158.1"
    report = json.loads(cli("scan", str(apps), "--json").stdout)
    outcome = {u["url"]: u["outcome"] for u in report["urls"]}
    assert outcome["https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js"] == "served"
    assert outcome["https://fonts.googleapis.com/css2?family=Inter"] == "refused"
    assert report["gap_specs"] == [["three@0.158.1", 2]]


def test_scan_of_a_missing_folder_names_it(tmp_path):
    p = cli("scan", str(tmp_path / "nope"))
    assert p.returncode == 2 and "nope: no such file or folder" in p.stderr


TINY = {"tinylib": {v: {"lib/tinylib.js": f"window.tinylib = {{version: '{v}'}};\n"} for v in ("1.0.0", "1.1.0", "2.0.0")}}


@pytest.fixture()
def npm_project(tmp_path):
    prefix = tmp_path / "cdn"
    prefix.mkdir()
    (prefix / "package.json").write_text(json.dumps({"name": "m", "private": True, "dependencies": {}}))
    with FakeNpm(TINY) as reg:
        env = {"npm_config_registry": reg.url, "npm_config_cache": str(tmp_path / "npm-cache"),
               "RUBRICRL_ENV__RUNTIME__CDN_DIR": str(prefix / "node_modules")}
        yield prefix, env, reg


@needs_npm
def test_add_pins_exact_versions_through_npm_and_the_mirror_serves_them(npm_project):
    prefix, env, reg = npm_project
    p = cli("add", "tinylib@1.0.0", "tinylib@^1", env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "pinned: tinylib-1.0.0, tinylib-1.1.0"  # ^1 is 1.x's newest, not 2.0.0
    deps = json.loads((prefix / "package.json").read_text())["dependencies"]
    assert deps == {"tinylib-1.0.0": "npm:tinylib@1.0.0", "tinylib-1.1.0": "npm:tinylib@1.1.0"}
    lock = json.loads((prefix / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/tinylib-1.0.0"]["version"] == "1.0.0"
    m = CdnMirror(prefix / "node_modules")
    got = m.resolve("https://cdn.jsdelivr.net/npm/tinylib@1.0.0/lib/tinylib.js")
    assert got.served.body == b"window.tinylib = {version: '1.0.0'};\n"
    assert m.resolve("https://unpkg.com/tinylib@1/lib/tinylib.js").served.body.endswith(b"'1.1.0'};\n")
    again = cli("add", "tinylib@1.0.0", env=env)
    assert again.returncode == 0 and "nothing new" in again.stdout


@needs_npm
def test_add_refuses_a_version_the_registry_lacks_before_installing_anything(npm_project):
    prefix, env, reg = npm_project
    before = (prefix / "package.json").read_text()
    p = cli("add", "tinylib@1.0.0", "tinylib@1.0.7", env=env)
    assert p.returncode == 2
    assert "the registry has no tinylib@1.0.7 (published near it: 1.0.0" in p.stderr
    assert (prefix / "package.json").read_text() == before and not (prefix / "node_modules").exists()
    bad = cli("add", "tinylib", env=env)
    assert bad.returncode == 2 and "not an npm spec" in bad.stderr
