"""``rubricrl``: run the pipeline, query stages, serve deployments, score responses.

    rubricrl run [--profile demo|full] [--set synth.n_queries=500] [--only FLOW] [--wait]
    rubricrl sql "SELECT count(*) FROM queries"
    rubricrl stages | catalog | config
    rubricrl cost [--dry-run --profile full]
    rubricrl ingest FILE.jsonl
    rubricrl mirror scan DIR | mirror add p5@1.4.0   # the sandbox's CDN mirror: what apps need, pinning it
    rubricrl serve            # local Prefect server + process worker + every deployment
    rubricrl serve-judge MODEL_DIR   # vLLM OpenAI-compatible server for an open judge (llm.provider=openai)
    rubricrl serve-env        # the environment as a reward service (TRL, verl, OpenRLHF; docs/service.md)
    rubricrl serve-openenv    # the package's OpenEnv server in .envs/openenv (make envs; docs/environments.md)
    rubricrl export-tasks --out tasks.jsonl   # published queries + rubrics for environments/rubricrl_webapp
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

PIPELINE = ["synthesize-queries", "build-rubrics", "generate-sft", "train-sft", "select-rl-queries", "train-rl",
            "evaluate"]
FLOWS = {  # flow name -> (module, function)
    "synthesize-queries": ("flows.synthesize_queries", "synthesize_queries"),
    "build-rubrics": ("flows.build_rubrics", "build_rubrics"),
    "generate-sft": ("flows.generate_sft", "generate_sft"),
    "train-sft": ("flows.train_sft", "train_sft"),
    "select-rl-queries": ("flows.select_rl_queries", "select_rl_queries"),
    "train-rl": ("flows.train_rl", "train_rl"),
    "evaluate": ("flows.evaluate", "evaluate"),
    "score-rollouts": ("flows.score_rollouts", "score_rollouts"),
}


def _store(args: argparse.Namespace):
    from schemas.config import load_config
    from tasks.stages.store import StageStore

    return StageStore(load_config(args.profile, sets=args.set).data_dir)


def _flow(name: str):
    import importlib

    if name not in FLOWS:
        raise ValueError(f"unknown flow {name!r}; choose from {', '.join(FLOWS)}")
    module, fn = FLOWS[name]
    return getattr(importlib.import_module(module), fn)


EMPTY_SELECTION_RC = 3


def cmd_run(args: argparse.Namespace) -> int:
    from schemas.config import load_config

    from rubricrl.run_summary import run_summary
    from schemas.config.selection import EMPTY_SELECTION_HELP
    from tasks.stages.lock import data_dir_lock

    cfg = load_config(args.profile, sets=args.set)  # fail fast on a bad setting, before Prefect starts
    names = args.only or PIPELINE
    done: list[str] = []
    stop = None
    with data_dir_lock(cfg.data_dir, wait=args.wait):  # one run per data directory; the kernel frees it on death
        try:
            for name in names:
                print(f"== {name} (profile {cfg.profile})", flush=True)
                result = _flow(name)(profile=cfg.profile, sets=args.set, force=args.force)
                done.append(name)
                if name == "select-rl-queries" and not result.get("selected") and name != names[-1]:
                    stop = (f"select-rl-queries found no discriminative query: {result.get('all_equal')} of "
                            f"{result.get('candidates')} candidates have equal probe rewards, so rl_queries is "
                            f"empty and {', '.join(names[names.index(name) + 1:])} did not run. What helps: "
                            f"{EMPTY_SELECTION_HELP}.")
                    break
        finally:  # what did complete is summarised even when a flow fails
            _print_where(args)
            print(run_summary(_store(args), done).text(), flush=True)
    if stop:
        print(f"\nrubricrl run: stopped: {stop}", file=sys.stderr)
        return EMPTY_SELECTION_RC
    return 0


def _print_where(args: argparse.Namespace) -> None:
    from schemas.layout import CATALOG

    store = _store(args)
    print("\nPublished stages:")
    for m in store.published():
        print(f"  {m.stage:<20} {m.row_count:>8} rows  provider={m.provider:<9} {store.stage_dir(m.stage) / m.version}")
    cat = store.root / CATALOG
    duckdb_cli = Path(sys.executable).parent / "duckdb"
    print(f"\nOpen them in DuckDB:  {duckdb_cli} {cat} -c \"select count(*) from queries\"")
    print(f"                 or:  rubricrl sql \"select domain, count(*) from queries group by 1\"")


def cmd_sql(args: argparse.Namespace) -> int:
    from tasks.stages.catalog import format_table, query

    cols, rows = query(_store(args), args.query)
    print(format_table(cols, rows))
    return 0


def cmd_stages(args: argparse.Namespace) -> int:
    """One JSON line per published stage, each part checked against its manifest; damage is named on stderr
    with the command that rebuilds it (exit 1)."""
    store = _store(args)
    damage: list[str] = []
    for name in store.stage_names():
        try:
            m = store.manifest(name)
        except ValueError as e:  # a manifest that is not JSON: the others are still listed
            damage.append(str(e))
            continue
        if m is None:
            continue
        faults = store.faults(name)
        damage += faults
        print(json.dumps({"stage": m.stage, "rows": m.row_count, "version": m.version, "provider": m.provider,
                          "created_at": m.created_at, "validation": m.validation.get("summary"),
                          "parts": (f"{len(faults)} of {len(m.parts)} damaged" if faults else
                                    "checked" if m.checksums else "not checked (no checksums in the manifest)")}))
    for line in damage:
        print(f"rubricrl stages: {line}", file=sys.stderr)
    return 1 if damage else 0


def cmd_catalog(args: argparse.Namespace) -> int:
    from tasks.stages.catalog import refresh_catalog

    print(refresh_catalog(_store(args)))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from schemas.config import load_config

    print(load_config(args.profile, sets=args.set).model_dump_json(indent=2))
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from schemas.config import load_config

    from tasks.stages.lock import data_dir_lock

    path = Path(args.file).resolve()
    cfg = load_config(args.profile, sets=args.set)  # --profile omitted: the default profile by name
    sets = [*(args.set or []), f"synth.ingest_path={path}"]
    if args.tests:
        sets.append(f"synth.ingest_tests={Path(args.tests).resolve()}")
    with data_dir_lock(cfg.data_dir):
        result = _flow("synthesize-queries")(profile=cfg.profile, sets=sets, force=True)
    errors = result.get("ingest_errors", [])
    for e in errors:
        print(f"{path}: {e} (skipped; good lines kept)", file=sys.stderr)
    return 1 if errors else 0


def cmd_cost(args: argparse.Namespace) -> int:
    """The ledger and cost of what ran in this data dir, and with --dry-run an estimate for a profile."""
    from pathlib import Path as _P

    from schemas.config import load_config
    from tasks.llm.cache import CallStore
    from tasks.llm.ledger import print_ledger_summary

    cfg = load_config(args.profile, sets=args.set)
    path = _P(cfg.resolved_llm().store_path)
    rows = []
    if path.exists():
        store = CallStore(path)
        print(f"== ledger ({path})")
        print_ledger_summary(store)
        rows = store.ledger_rows()
    else:
        print(f"== ledger: none yet at {path} (run `make run` first)")
    if args.dry_run:
        from tasks.llm.anthropic_provider import DEFAULT_MODEL
        from tasks.llm.cost import estimate_profile, format_report, offline_note

        model = cfg.llm.model or DEFAULT_MODEL
        print(f"\n== dry run for profile {cfg.profile}\n{offline_note(rows)}", end="")
        print(format_report(estimate_profile(cfg, rows, model), model, cfg))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from rubricrl.serve import serve, stop

    if args.stop:
        return stop()
    return serve(port=args.port, pool=args.pool, once=args.no_wait)


def cmd_serve_judge(args: argparse.Namespace) -> int:
    from schemas.config import load_config
    from tasks.llm.vllm_server import serve_judge

    server = load_config(args.profile, sets=args.set).llm.server
    updates = {k: v for k, v in (("port", args.port), ("max_model_len", args.max_model_len)) if v is not None}
    return serve_judge(args.model_dir, server.model_copy(update=updates), name=args.name, log_path=args.log)


def cmd_serve_env(args: argparse.Namespace) -> int:
    from rubricrl.service.server import serve_env
    from schemas.config import load_config

    sets = [*args.set, *(f"service.{k}={v}" for k, v in (("host", args.host), ("port", args.port)) if v is not None)]
    return serve_env(load_config(args.profile, sets=sets))


def cmd_serve_openenv(args: argparse.Namespace) -> int:
    from rubricrl.environments.serve_openenv import serve_openenv
    from schemas.config import load_config

    sets = [*args.set, *(f"{k}={v}" for k, v in (("service.host", args.host), ("environments.openenv_port", args.port),
                                                  ("environments.max_turns", args.max_turns)) if v is not None)]
    return serve_openenv(load_config(args.profile, sets=sets), args.split, args.benchmark)


def cmd_score(args: argparse.Namespace) -> int:
    """``rubricrl score``: the environment's contract, with the project configuration (--profile, --set)."""
    from rubricrl import score_cmd

    return score_cmd.run(args)


def cmd_export_tasks(args: argparse.Namespace) -> int:
    from rubricrl import export_tasks
    from schemas.config import load_config

    return export_tasks.run(args, load_config(args.profile, sets=args.set))


def add_serve_openenv(sub: Any) -> None:
    """`rubricrl serve-openenv`'s arguments (docs/environments.md)."""
    from rubricrl.options import add_config_options as common
    from schemas.config.environments import SPLITS

    o = common(sub.add_parser("serve-openenv", help="the package's OpenEnv server (in .envs/openenv: make envs) on "
                                                     "127.0.0.1, relaying apps to a running serve-env"))
    o.add_argument("--host", default=None, help="listen address (default service.host; the same token rule)")
    o.add_argument("--port", type=int, default=None, help="listen port (default environments.openenv_port)")
    o.add_argument("--split", default=SPLITS[0], choices=SPLITS,
                   help="the published queries to draw from (all: every query with a rubric)")
    o.add_argument("--benchmark", default=None, help="only the queries ingested from this benchmark file")
    o.add_argument("--max-turns", type=int, default=None, help="apps per episode (default environments.max_turns)")
    o.set_defaults(fn=cmd_serve_openenv)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rubricrl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    from rubricrl.options import add_config_options as common

    r = common(sub.add_parser("run", help="run the pipeline (or --only some flows)"))
    r.add_argument("--only", action="append", choices=list(FLOWS))
    r.add_argument("--force", action="store_true", help="rebuild stages even if current")
    r.add_argument("--wait", action="store_true", help="if another run holds the data directory, wait for it to "
                                                       "end instead of stopping")
    r.set_defaults(fn=cmd_run)
    s = common(sub.add_parser("sql", help="run a SQL query over the stage catalog"))
    s.add_argument("query")
    s.set_defaults(fn=cmd_sql)
    common(sub.add_parser("stages", help="list published stages, each part checked against its manifest")).set_defaults(fn=cmd_stages)
    common(sub.add_parser("catalog", help="refresh data/catalog.duckdb views")).set_defaults(fn=cmd_catalog)
    common(sub.add_parser("config", help="print the resolved configuration")).set_defaults(fn=cmd_config)
    i = common(sub.add_parser("ingest", help="ingest an external JSONL query file as the queries stage"))
    i.add_argument("file")
    i.add_argument("--tests", default=None, metavar="DIR", help="the benchmark's folder of per-task test specs "
                                                                 "(InteractScience PFT_tests/; default: found beside "
                                                                 "the file)")
    i.set_defaults(fn=cmd_ingest)
    c = common(sub.add_parser("cost", help="ledger and cost summary; --dry-run estimates a profile's calls and cost"))
    c.add_argument("--dry-run", action="store_true", help="estimate the calls, tokens and cost of the profile")
    c.set_defaults(fn=cmd_cost)
    sv = sub.add_parser("serve", help="start a local Prefect server and worker, deploy every flow")
    sv.add_argument("--port", type=int, default=int(os.environ.get("RUBRICRL_PREFECT_PORT", "4200")))
    sv.add_argument("--pool", default="rubricrl-process")
    sv.add_argument("--no-wait", action="store_true", help="deploy and return, leaving server and worker running")
    sv.add_argument("--stop", action="store_true", help="stop a server and worker started with --no-wait")
    sv.set_defaults(fn=cmd_serve)
    j = common(sub.add_parser("serve-judge", help="serve a model directory with vLLM's OpenAI-compatible server "
                                                   "on 127.0.0.1 and print the --set items that use it"))
    j.add_argument("model_dir", help="Hugging Face model directory (config.json, weights, tokenizer)")
    j.add_argument("--port", type=int, default=None, help="listen port (default llm.server.port)")
    j.add_argument("--name", default=None, help="served model name (default: the directory's name)")
    j.add_argument("--max-model-len", type=int, default=None, help="context length (default: the model's)")
    j.add_argument("--log", default=None, help="server log file (default: a temporary file, printed)")
    j.set_defaults(fn=cmd_serve_judge)
    e = common(sub.add_parser("serve-env", help="serve the environment as a reward service on 127.0.0.1 "
                                                 "(POST /score; adapters for TRL, verl, OpenRLHF)"))
    e.add_argument("--host", default=None, help="listen address (default service.host, 127.0.0.1; any other "
                                                "needs the token in $RUBRICRL_SERVICE_TOKEN)")
    e.add_argument("--port", type=int, default=None, help="listen port (default service.port)")
    e.set_defaults(fn=cmd_serve_env)
    add_serve_openenv(sub)
    from rubricrl import score_cmd

    score_cmd.add_parser(sub).set_defaults(fn=cmd_score)
    from rubricrl import mirror_cmd

    mirror_cmd.add_parser(sub).set_defaults(fn=mirror_cmd.run)
    from rubricrl import export_tasks
    from rubricrl.options import add_config_options

    add_config_options(export_tasks.add_parser(sub)).set_defaults(fn=cmd_export_tasks)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        rc = int(args.fn(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return rc
    except BrokenPipeError:
        # the reader went away (`rubricrl stages | head -3`): stop quietly; point stdout at /dev/null so the
        # interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, FileNotFoundError, LookupError, RuntimeError) as e:
        print(f"rubricrl {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
