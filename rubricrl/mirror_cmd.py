"""``rubricrl mirror``: what a folder of apps needs from the sandbox's CDN mirror, and pinning what it lacks.

    rubricrl mirror scan DIR... [--show gaps|all] [--json]   # library URLs the apps load, by what the sandbox does
    rubricrl mirror add SPEC...                                # pin p5@1.4.0, mathjax@3, ... (npm, set-up time)

``scan`` reads ``.html`` apps and ``.txt`` responses (their HTML application extracted) under each DIR and
prints, most used first, the URLs the mirror lacks (gaps: the environment cannot judge an app that fails
after one) with how many apps load each and the spec that pins it, then the totals and the coverage.
``add`` edits the mirror's package.json and lockfile through npm and installs the pins (the mirror is
``env.runtime.cdn_dir``; its npm project is the folder above). Exit 2 names a bad input.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("mirror", help="scan apps for the CDN libraries the sandbox lacks; pin them",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=["demo", "full"], default=None, help="config profile (default demo)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE", help="override a setting")
    sub = p.add_subparsers(dest="mirror_command", required=True)
    s = sub.add_parser("scan", help="library URLs a folder of apps loads, and which the mirror lacks")
    s.add_argument("dirs", nargs="+", type=Path, help="folders (or files) of .html apps or .txt responses")
    s.add_argument("--show", choices=["gaps", "all"], default="gaps", help="list the gaps only (default) or every URL")
    s.add_argument("--json", action="store_true", help="print the whole report as JSON")
    a = sub.add_parser("add", help="pin npm packages into the mirror (package.json, lockfile, install)")
    a.add_argument("specs", nargs="+", help="name@version (a range or tag pins its newest version), e.g. p5@1.4.0")
    return p


def _mirror_root(args: argparse.Namespace) -> Path:
    from schemas.config import load_config

    root = load_config(args.profile, sets=args.set).env.runtime.cdn_root()
    if root is None:
        raise ValueError("env.runtime.cdn_dir is null (no mirror); set it to the mirror's node_modules, "
                         "e.g. --set env.runtime.cdn_dir=vendor/cdn/node_modules")
    return root


def run(args: argparse.Namespace) -> int:
    from tasks.env.cdn import OUTCOMES, CdnMirror
    from tasks.env.mirror import add, format_report, scan

    root = _mirror_root(args)
    if args.mirror_command == "add":
        added = add(args.specs, root.parent)
        print("pinned: " + (", ".join(added) if added else "nothing new (every spec is already installed)"))
        return 0
    mirror = CdnMirror(root)
    if not mirror.available:
        raise FileNotFoundError(f"the mirror {root} is not installed: npm ci --prefix {root.parent} --ignore-scripts "
                                "(part of `make setup`)")
    report = scan(args.dirs, mirror)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(format_report(report, OUTCOMES if args.show == "all" else ("environment_gap",)))
    return 0

