"""How the browser is launched for the runtime: its flags, and the empty network namespace it runs in.

The walls the flags build (no name resolves, no WebRTC UDP, software compositing) are described in
``tasks/env/runtime.py``; ``sandbox_launch`` wraps the browser in ``browser-netns.sh`` so that it starts in a
network namespace of its own, or refuses to start where none can be made.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from schemas.config.env import RuntimeConfig
from tasks.env.page import APP_ORIGIN


def launch_args(cfg: RuntimeConfig, marker: str) -> list[str]:
    args = [
        "--host-resolver-rules=MAP * ~NOTFOUND",  # second wall behind the routes: no name resolves
        "--webrtc-ip-handling-policy=disable_non_proxied_udp", "--force-webrtc-ip-handling-policy",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio", "--autoplay-policy=no-user-gesture-required",
        f"--unsafely-treat-insecure-origin-as-secure={APP_ORIGIN}",  # crypto.subtle, clipboard... as on https
        f"--rubricrl-runtime={marker}",  # lets a test (or an operator) find this browser's processes
    ]
    if cfg.swiftshader:
        # Software WebGL: disabling WebGL would make correct three.js apps fail.
        args += ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"]
    # Composite pages in software: with full chromium and SwiftShader every page's frames otherwise go through
    # the one GPU process, which serialises the batch (measured ~1.4 -> ~2.0 apps/s at concurrency 4 on 2 cores);
    # the headless shell measures the same either way. WebGL itself still runs on SwiftShader in the GPU
    # process (tests/test_env_browser.py loads three.js).
    args.append("--disable-gpu-compositing")
    return args


_NETNS_WRAPPER = Path(__file__).with_name("browser-netns.sh")
# Tried in order: plain (needs CAP_SYS_ADMIN, e.g. root), then inside a new user namespace (unprivileged).
_NETNS_OPTIONS = ("--net", "--user --map-root-user --net")
_netns_found: dict[str, str | None] = {}


def netns_options() -> str | None:
    """The unshare options that give a new network namespace on this machine, or None (probed once)."""
    if "opts" not in _netns_found:
        import shutil
        import subprocess

        found = None
        if shutil.which("unshare"):
            for opts in _NETNS_OPTIONS:
                if subprocess.run(["unshare", *opts.split(), "--", "true"], capture_output=True).returncode == 0:
                    found = opts
                    break
        _netns_found["opts"] = found
    return _netns_found["opts"]


def sandbox_launch(cfg: RuntimeConfig) -> dict[str, Any]:
    """Playwright launch options for the browser: inside an empty network namespace unless turned off."""
    opts: dict[str, Any] = {"executable_path": cfg.executable_path}
    if not cfg.network_namespace:
        return opts
    netns = netns_options()
    if netns is None:
        raise ValueError("cannot start the browser in an empty network namespace here (`unshare --net` and "
                         "`unshare --user --map-root-user --net` both refused: no root and user namespaces are off); "
                         "allow one (e.g. sysctl kernel.unprivileged_userns_clone=1, or "
                         "kernel.apparmor_restrict_unprivileged_userns=0), or set env.runtime.network_namespace=false "
                         "and accept that WebRTC's UDP can then reach this machine")
    return {"executable_path": str(_NETNS_WRAPPER),
            "env": {**os.environ, "RUBRICRL_NETNS": netns, "RUBRICRL_BROWSER": cfg.executable_path}}
