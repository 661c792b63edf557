"""The configuration options every ``rubricrl`` command takes (``schemas.config.load_config`` resolves them)."""
from __future__ import annotations

import argparse

from schemas.config import PROFILES


def add_config_options(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--profile`` and repeatable ``--set SECTION.FIELD=VALUE``, applied over ``RUBRICRL_*``."""
    p.add_argument("--profile", choices=PROFILES, default=None, help="config profile (default demo)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE", help="override a setting")
    return p
