"""``rubricrl serve-env``: bind, token and the uvicorn server.

The service listens on ``service.host`` (127.0.0.1 by default). Any other address needs a token of at
least ``MIN_TOKEN_CHARS`` characters in the variable ``service.token_env`` names; without one it refuses
to start. With a token every request must carry it (401 otherwise), on loopback too.

SIGTERM (or Ctrl-C) stops it cleanly: the listener closes at once (new connections are refused),
requests in flight run to their answer (each ends within ``service.request_timeout_s``), then the
engine stops: kept scores are published, the browser closes.
"""
from __future__ import annotations

import ipaddress
import os
import signal
import sys
from typing import Any

from schemas.config import Config

MIN_TOKEN_CHARS = 16
_SHUTDOWN_MARGIN_S = 30.0  # past the request time limit, for the answers' transfer
_ADMIT_S = 0.5  # after the listener closes, for requests already on open connections to be read


def draining_server(config: Any) -> Any:
    """uvicorn's graceful stop with the listener closed first, then a moment for requests that reached an open
    connection (received, not yet read) to start, so none that reached the service is cut off unanswered;
    uvicorn then closes idle connections and waits for the requests in flight."""
    import asyncio

    import uvicorn

    class Draining(uvicorn.Server):
        async def shutdown(self, sockets: list[Any] | None = None) -> None:
            for server in self.servers:
                server.close()
            await asyncio.sleep(_ADMIT_S)
            await super().shutdown(sockets)

    return Draining(config)


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (pure)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, token_env: str) -> None:
    """Refuse a non-loopback address without a token, and a token too short to hold (pure)."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"${token_env} holds a token of {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                         "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    if token is None and not is_loopback(host):
        raise ValueError(f"service.host={host} is not a loopback address and ${token_env} (service.token_env) is not "
                         f"set: set a token of at least {MIN_TOKEN_CHARS} characters there first, or bind 127.0.0.1")


def serve_env(project: Config) -> int:
    import uvicorn

    from rubricrl.service.app import create_app
    from rubricrl.service.engine import ScoreEngine

    svc = project.service
    token = os.environ.get(svc.token_env) or None
    check_bind(svc.host, token, svc.token_env)
    engine = ScoreEngine(project)  # provider, browser and tokenizer up before the port opens
    where = f"http://{svc.host}:{svc.port}"
    offline = " (OFFLINE: no API key; every answer says provider=offline)" if engine.provider_name == "offline" else ""
    print(f"rubricrl serve-env: {where}  judge={engine.provider_name}{offline}  browser="
          f"{'on' if engine.runtime else 'off'}  token={'required' if token else 'none (loopback)'}", flush=True)
    print(f"  POST {where}/score  {where}/score/stream  {where}/openrlhf/get_reward   GET {where}/health  "
          f"{where}/metrics", flush=True)
    config = uvicorn.Config(create_app(engine, token), host=svc.host, port=svc.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=svc.request_timeout_s + _SHUTDOWN_MARGIN_S)
    server = draining_server(config)
    stopped_by: list[int] = []
    # uvicorn drains, then hands the signal it caught back to the handler it found: this one records it, so a
    # stop by SIGTERM or Ctrl-C ends in a normal exit after the engine has closed
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stopped_by.append(signum))
    server.run()
    if not server.started:
        return 1
    why = f" by {signal.Signals(stopped_by[0]).name}" if stopped_by else ""
    print(f"rubricrl serve-env: stopped{why}; requests in flight were answered", file=sys.stderr, flush=True)
    return 0
