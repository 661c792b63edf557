"""`rubricrl score` contract and exit codes; CDN URL parsing and version choice (pure)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.env.cdn import CdnMirror, rewrite_imports, unserved
from tasks.env.cdn_urls import choose_version, parse_cdn_url

REPO = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures" / "env"
CONTRACT = {"format_valid", "source_valid", "runtime_valid", "reward", "html_offset", "findings", "evidence"}
EMPTY = {k: {"critical": [], "major": [], "minor": []} for k in ("static_check", "code_simulation", "rubric_alignment")}


def score(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rubricrl.score_cmd", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_cli_with_diagnosis_no_browser_prints_the_contract(tmp_path):
    diag = dict(EMPTY, rubric_alignment={"critical": [], "major": [{"item_id": "D2", "description": "reset broken",
                                                                      "code_quotes": ["count = 0;"]}], "minor": []})
    (tmp_path / "d.json").write_text(json.dumps(diag))
    p = score("--task", str(FIX / "task_counter.json"), "--response", str(FIX / "clean.txt"),
              "--diagnosis", str(tmp_path / "d.json"), "--no-browser")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert CONTRACT <= set(out)
    assert out["format_valid"] and out["source_valid"] and out["runtime_valid"] is True
    assert out["html_offset"] == (FIX / "clean.txt").read_text().index("<!DOCTYPE")
    (f,) = out["findings"]
    assert {"layer": "rubric_alignment", "severity": "major", "item_id": "D2"}.items() <= f.items()
    assert {"syntax_errors", "page_errors"} <= set(out["evidence"]) and out["judge"]["provider"] == "given"
    binary = json.loads(score("--task", str(FIX / "task_counter.json"), "--response", str(FIX / "clean.txt"),
                              "--diagnosis", str(tmp_path / "d.json"), "--no-browser", "--reward", "binary").stdout)
    assert binary["reward"] == 0.0 and 0.3 < out["reward"] < 1.0


def test_cli_no_html_scores_zero_without_any_judge():
    p = score("--task", str(FIX / "task_counter.json"), "--response", str(FIX / "no_html.txt"), "--no-browser",
              "--provider", "offline")
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["format_valid"] is False and out["reward"] == 0.0 and out["html_offset"] is None


@pytest.mark.parametrize("case, needle", [
    ("missing_task", "task file"), ("bad_json", "not valid JSON"), ("bad_schema", "level one of"),
    ("missing_response", "response file"), ("binary_response", "not UTF-8"), ("bad_diagnosis", "diagnosis file"),
    ("dup_ids", "repeats rubric ids"),
])
def test_cli_exit_2_names_the_file_and_problem(tmp_path, capsys, case, needle):
    task, resp = FIX / "task_counter.json", FIX / "clean.txt"
    extra: list[str] = []
    if case == "missing_task":
        task = tmp_path / "nope.json"
    elif case == "bad_json":
        task = tmp_path / "t.json"
        task.write_text("{not json")
    elif case == "bad_schema":
        task = tmp_path / "t.json"
        task.write_text(json.dumps({"query_id": "q", "query": "x", "rubric": {"initial_state": [
            {"id": "I1", "requirement": "r", "level": "important"}], "dynamic": []}}))
    elif case == "missing_response":
        resp = tmp_path / "r.txt"
    elif case == "binary_response":
        resp = tmp_path / "r.txt"
        resp.write_bytes(b"\xff\xfe\x00bad")
    elif case == "bad_diagnosis":
        (tmp_path / "d.json").write_text(json.dumps({"static_check": "fine"}))
        extra = ["--diagnosis", str(tmp_path / "d.json")]
    elif case == "dup_ids":
        data = json.loads(task.read_text())
        data["rubric"]["dynamic"][0]["id"] = "I1"
        task = tmp_path / "t.json"
        task.write_text(json.dumps(data))
    from rubricrl.score_cmd import main

    rc = main(["--task", str(task), "--response", str(resp), "--no-browser", "--provider", "offline", *extra])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert needle in err and "rubricrl score:" in err


@pytest.mark.parametrize("url, expect", [
    ("https://cdn.jsdelivr.net/npm/chart.js@4.4.0/dist/chart.umd.min.js", ("chart.js", "4.4.0", "dist/chart.umd.min.js", "classic")),
    ("https://cdn.jsdelivr.net/npm/three@0.160.0/+esm", ("three", "0.160.0", "", "esm")),
    ("https://unpkg.com/@babel/standalone/babel.min.js", ("@babel/standalone", None, "babel.min.js", "classic")),
    ("https://unpkg.com/three@0.158.0/examples/jsm/controls/OrbitControls.js?module", ("three", "0.158.0", "examples/jsm/controls/OrbitControls.js", "esm")),
    ("https://cdnjs.cloudflare.com/ajax/libs/three.js/r128/three.min.js", ("three", "r128", "three.min.js", "classic")),
    ("https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.4.0/css/all.min.css", ("@fortawesome/fontawesome-free", "6.4.0", "css/all.min.css", "classic")),
    ("https://esm.sh/v135/d3@7.8.5", ("d3", "7.8.5", "", "esm")),
    ("https://ga.jspm.io/npm:lodash@4.17.21/lodash.js", ("lodash", "4.17.21", "lodash.js", "esm")),
    ("https://cdn.tailwindcss.com/3.4.1", ("@tailwindcss/browser", None, "", "tailwind-play")),
    ("https://code.jquery.com/jquery-3.6.0.min.js", ("jquery", "3.6.0", "dist/jquery.min.js", "classic")),
    ("https://d3js.org/d3.v7.min.js", ("d3", "7", "d3.min.js", "classic")),
    # Plotly froze plotly-latest at 1.58.5; a versioned file is that version's dist bundle
    ("https://cdn.plot.ly/plotly-latest.min.js", ("plotly.js-dist-min", "1.58.5", "plotly.min.js", "classic")),
    ("https://cdn.plot.ly/plotly-2.27.0.min.js", ("plotly.js-dist-min", "2.27.0", "plotly.min.js", "classic")),
    ("https://threejs.org/build/three.module.js", ("three", None, "build/three.module.js", "classic")),
    ("https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js", ("p5", "1.4.0", "p5.js", "classic")),
])
def test_parse_cdn_url(url, expect):
    ref = parse_cdn_url(url)
    assert (ref.package, ref.version, ref.path, ref.flavor) == expect


@pytest.mark.parametrize("url", ["https://evil.example.com/three.js", "https://fonts.googleapis.com/css2?family=Inter",
                                 "http://203.0.113.1/chart.js", "https://cdn.plot.ly/plotly-latest.min.css"])
def test_urls_that_name_no_library_file_are_not_parsed(url):
    assert parse_cdn_url(url) is None


def test_an_exact_version_or_nothing_a_range_gets_its_newest():
    have = ["0.128.0", "0.150.0", "0.160.0", "0.160.1"]
    assert choose_version(have, "0.160.0", "three") == "0.160.0"
    assert choose_version(have, "0.158.0", "three") is None  # no neighbour stands in for the version asked for
    assert choose_version(have, "r128", "three") == "0.128.0" and choose_version(have, "r150", "three") == "0.150.0"
    assert choose_version(have, "0.160", "three") == "0.160.1" and choose_version(have, "0.150", "three") == "0.150.0"
    assert choose_version(have, None) == "0.160.1" and choose_version(have, "latest") == "0.160.1"
    charts = ["2.9.4", "3.9.1", "4.4.0", "4.4.1", "5.0.0-beta.1"]
    assert choose_version(charts, "^3.7.0") == "3.9.1" and choose_version(charts, "2") == "2.9.4"
    assert choose_version(charts, "~4.4.0") == "4.4.1" and choose_version(charts, ">=3") == "4.4.1"
    assert choose_version(charts, "^3.9.2") is None and choose_version(charts, "5") is None  # prereleases by name only
    assert choose_version(charts, "5.0.0-beta.1") == "5.0.0-beta.1"
    assert choose_version(["0.0.16", "0.1.0"], "^0.0.16") == "0.0.16" and choose_version(charts, "next") is None


@pytest.mark.parametrize("url, rtype, outcome", [
    ("https://fonts.googleapis.com/css2?family=Inter", "stylesheet", "refused"),
    ("https://polyfill.io/v3/polyfill.min.js?features=es6", "script", "refused"),
    ("https://www.googletagmanager.com/gtag/js?id=G-1", "script", "refused"),
    ("https://api.example.com/data.json", "fetch", "refused"),
    ("https://images.example.net/logo.png", "image", "refused"),
    ("https://libs.example.org/widget.js", "script", "environment_gap"),  # an unknown library host
    ("https://cdn.jsdelivr.net/gh/user/repo@1.0/lib.js", "script", "environment_gap"),  # a library CDN's other forms
    ("https://cdn.mathjax.org/mathjax/latest/MathJax.js", "script", "environment_gap"),
])
def test_what_no_mirror_file_answers_is_a_gap_or_refused_on_purpose(url, rtype, outcome):
    assert unserved(url, rtype)[0] == outcome


def test_rewrite_imports_points_at_esm_sh():
    src = "import * as T from 'three';\nexport * from \"./core/a.js\";\nconst m = import('../b.js'); import x from 'https://x.org/y.js';"
    out = rewrite_imports(src, "https://esm.sh/three@0.160.1/src/index.js")
    assert "from 'https://esm.sh/three'" in out and '"https://esm.sh/three@0.160.1/src/core/a.js"' in out
    assert "import('https://esm.sh/three@0.160.1/b.js')" in out and "'https://x.org/y.js'" in out


def needs_mirror(test):
    """The sandbox's CDN mirror: a missing npm install skips here, and fails in CI (a browser-kind test)."""
    skip = pytest.mark.skipif(not (REPO / "vendor/cdn/node_modules").is_dir(),
                              reason="npm ci --prefix vendor/cdn --ignore-scripts")
    return pytest.mark.browser(skip(test))


@needs_mirror
def test_mirror_resolves_pinned_files_by_layout_and_version():
    m = CdnMirror(REPO / "vendor/cdn/node_modules")
    assert "three-0.128.0" in m.resolve("https://cdnjs.cloudflare.com/ajax/libs/three.js/r128/three.min.js").served.file
    v2 = m.resolve("https://cdnjs.cloudflare.com/ajax/libs/Chart.js/2.9.4/Chart.min.js").served
    assert "chart.js-2.9.4" in v2.file and v2.content_type == "text/javascript"
    fa = m.resolve("https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.4.0/webfonts/fa-solid-900.woff2").served
    assert fa.content_type == "font/woff2" and fa.body[:4] == b"wOF2" and "fontawesome-free-6.4.0" in fa.file
    tw = m.resolve("https://cdn.tailwindcss.com").served
    assert tw.body.startswith(b"window.tailwind = window.tailwind ||")
    gap = m.resolve("https://unpkg.com/not-a-vendored-package@1.0.0/index.js")
    assert gap.outcome == "environment_gap" and gap.spec == "not-a-vendored-package@1.0.0"


@needs_mirror
def test_mirror_serves_the_exact_version_a_url_names_or_nothing():
    m = CdnMirror(REPO / "vendor/cdn/node_modules")
    p5 = m.resolve("https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.4.0/p5.js").served
    assert "p5-1.4.0/lib/p5.js" in p5.file and b"p5.js v1.4.0" in p5.body[:300]
    math = m.resolve("https://cdnjs.cloudflare.com/ajax/libs/mathjs/11.5.0/math.js").served
    assert "mathjs-11.5.0/lib/browser/math.js" in math.file and b"has been moved" not in math.body[:2000]
    latest = m.resolve("https://cdn.plot.ly/plotly-latest.min.js").served
    assert b"plotly.js v1.58.5" in latest.body[:200]
    assert b"plotly.js v2.27.0" in m.resolve("https://cdn.plot.ly/plotly-2.27.0.min.js").served.body[:200]
    assert "mathjax-3.2.2" in m.resolve("https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js").served.file
    # three r150 removed examples/js: the real CDN answers 404 for that version, so does the mirror
    gone = m.resolve("https://cdn.jsdelivr.net/npm/three@0.150.0/examples/js/controls/OrbitControls.js")
    assert gone.outcome == "not_found" and gone.served is None
    kept = m.resolve("https://cdn.jsdelivr.net/npm/three@0.128.0/examples/js/controls/OrbitControls.js").served
    assert "three-0.128.0/examples/js/controls/OrbitControls.js" in kept.file  # the twin: that version has it
    lacking = m.resolve("https://cdn.jsdelivr.net/npm/three@0.158.1/build/three.min.js")
    assert lacking.outcome == "environment_gap" and lacking.spec == "three@0.158.1"  # not 0.158.0 in its place
    assert m.resolve("https://cdnjs.cloudflare.com/ajax/libs/three.js/r128/examples/js/controls/OrbitControls.js"
                     ).outcome == "not_found"  # cdnjs serves three.js's build folder only


@pytest.mark.parametrize("version, spec, expect", [  # npm's reading of a range (node-semver), a table
    ("3.10.0", "^3.9.1", True), ("4.0.0", "^3.9.1", False), ("0.0.17", "^0.0.16", False), ("0.1.5", "^0.1.0", True),
    ("1.2.9", "~1.2", True), ("1.3.0", "~1.2", False), ("1.9.0", "~1", True), ("2.5.0", ">=2", True),
    ("2.5.0", ">=2 <2.5", False), ("0.128.0", "0.128", True), ("0.129.0", "0.128", False), ("4.1.0", "^3 || ^4", True),
    ("1.4.0", "1.x", True), ("1.4.0", "*", True), ("1.2.3", "v1.2.3", True), ("1.2.3", "1.2.0 - 1.3.0", True),
    ("3.0.0-beta.1", "^3", False), ("3.0.0-beta.2", "^3.0.0-beta.1", True), ("3.0.0", "latest", True),
    ("3.0.0-rc.1", "latest", False), ("3.0.0", None, True), ("3.0.0", "next", None), ("3.0.0", "^^3", None),
])
def test_a_range_is_read_as_npm_reads_it(version, spec, expect):
    from tasks.env.cdn_urls import satisfies

    assert satisfies(version, spec) is expect
