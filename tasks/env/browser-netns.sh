#!/bin/sh
# Starts the browser in a new network namespace that has no usable interface (only its loopback, which is down),
# so no socket a page opens reaches any host, this one included: WebRTC's UDP, preconnects and the requests of
# SharedWorkers never pass through the request routes. Playwright still drives the browser over its pipe, and
# app pages are served by the routes, so nothing the sandbox allows needs the network. Chosen by
# tasks/env/runtime.py (sandbox_launch), which sets:
#   RUBRICRL_NETNS    the unshare options that work here ("--net" as root, "--user --map-root-user --net" if not)
#   RUBRICRL_BROWSER  the browser executable
# shellcheck disable=SC2086  # RUBRICRL_NETNS is a list of options
exec unshare $RUBRICRL_NETNS -- "$RUBRICRL_BROWSER" "$@"
