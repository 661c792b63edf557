#!/usr/bin/env bash
# System pieces the project needs beyond Python: Debian's chromium-headless-shell (headless runtime
# checks; never `playwright install`), the pinned local copies of CDN libraries served to generated apps,
# and Node's pinned @playwright/test that runs public benchmarks' own tests (vendor/pft).
# Idempotent: does nothing when all are present.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/lib/chromium/chromium-headless-shell ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    echo "chromium-headless-shell is missing: apt-get install -y chromium-headless-shell, or run with --no-browser" >&2
    exit 1
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium-headless-shell >/dev/null
fi
if [ ! -f vendor/cdn/node_modules/.package-lock.json ] || [ vendor/cdn/package-lock.json -nt vendor/cdn/node_modules/.package-lock.json ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm is missing: apt-get install -y npm" >&2; exit 1; }
  npm ci --prefix vendor/cdn --ignore-scripts --no-audit --no-fund --loglevel=error
fi
if [ ! -f vendor/pft/node_modules/.package-lock.json ] || [ vendor/pft/package-lock.json -nt vendor/pft/node_modules/.package-lock.json ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm is missing: apt-get install -y npm" >&2; exit 1; }
  npm ci --prefix vendor/pft --ignore-scripts --no-audit --no-fund --loglevel=error
fi
