#!/bin/sh
# Starts the browser in a new network namespace in which only the CDN mirror's server listens, on the loopback,
# so no socket a page opens reaches any other host, this one included: WebRTC's UDP, preconnects and the requests
# of SharedWorkers never pass through the request routes. Playwright still drives the browser over its pipe, and
# app pages are served by the routes, so nothing else the sandbox allows needs the network. Chosen by
# tasks/env/launch.py (sandbox_launch), which sets:
#   RUBRICRL_NETNS    the unshare options that work here ("--net" as root, "--user --map-root-user --net" if not);
#                     empty: no namespace of its own (env.runtime.network_namespace=false)
#   RUBRICRL_BROWSER  the browser executable
#   RUBRICRL_PYTHON, RUBRICRL_MIRROR_SERVE, RUBRICRL_SERVE_ROOT, RUBRICRL_SERVE_PORT
#                     the mirror's server (mirror_serve.py ROOT PORT), which then execs the browser; unset: none
# shellcheck disable=SC2086  # RUBRICRL_NETNS is a list of options
if [ -n "$RUBRICRL_MIRROR_SERVE" ]; then
  set -- "$RUBRICRL_PYTHON" "$RUBRICRL_MIRROR_SERVE" "$RUBRICRL_SERVE_ROOT" "$RUBRICRL_SERVE_PORT" "$RUBRICRL_BROWSER" "$@"
else
  set -- "$RUBRICRL_BROWSER" "$@"
fi
if [ -n "$RUBRICRL_NETNS" ]; then
  exec unshare $RUBRICRL_NETNS -- "$@"
fi
exec "$@"
