"""``rubricrl score``: score one response against one task and print the JSON contract to stdout.

    rubricrl score --task TASK.json --response RESPONSE.txt [--diagnosis DIAGNOSIS.json]
                   [--no-browser] [--reward hierarchical|binary] [--provider auto|offline|anthropic|openai]
                   [--model NAME] [--base-url URL] [--profile demo|full] [--set SECTION.FIELD=VALUE ...]

Output: {"format_valid", "source_valid", "runtime_valid", "reward", "tier", "html_offset", "findings",
"evidence": {"syntax_errors", "page_errors", ...}, ...}; offsets are character offsets into the response.
Exit 0 on a scored response (a missing reward included: ``reward`` is null), 2 on unreadable inputs
with a message on stderr naming the file and the problem.

``rubricrl/cli.py`` adds it with ``score_cmd.add_parser(subparsers)`` and dispatches to
``score_cmd.run(args)``. The configuration is the project's, resolved like every command's (profile,
``RUBRICRL_*``, ``--set``): ``env`` scores, ``llm`` chooses the judge (``--provider``, ``--model``,
``--base-url`` override it when given), ``attribution`` gives both the spans and the weights, and
``train.objective.mode`` the weight rule (the trainer's). Standalone: ``python -m rubricrl.score_cmd --task ...``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# the provider names from the config schema: `rubricrl --help` and every other command stay free of the
# LLM layer's imports (great_expectations costs seconds per process)
from rubricrl.options import add_config_options
from schemas.config.llm import PROVIDERS

EXIT_OK, EXIT_BAD_INPUT = 0, 2


class InputError(Exception):
    """An unreadable input; the message names the file and the problem."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("score", help="score one response: gates, judge findings, reward (JSON to stdout)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(p)
    p.set_defaults(func=run)
    return p


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, type=Path, help='TASK.json: {"query_id", "query", "rubric": '
                   '{"initial_state": [{"id","requirement","level"}], "dynamic": [...]}}')
    p.add_argument("--response", required=True, type=Path, help="RESPONSE.txt: the model's full response text")
    p.add_argument("--diagnosis", type=Path, default=None, help="DIAGNOSIS.json: a judge output; no LLM is called")
    p.add_argument("--no-browser", action="store_true", help="skip the headless-browser runtime check")
    p.add_argument("--reward", choices=("hierarchical", "binary"), default=None,
                   help="reward kind (default: env.reward_kind, hierarchical)")
    p.add_argument("--provider", choices=PROVIDERS, default=None,
                   help="judge provider when no --diagnosis (default: llm.provider; auto: anthropic if "
                        "ANTHROPIC_API_KEY is set)")
    p.add_argument("--model", default=None, help="judge model (needed for openai: the name the endpoint serves)")
    p.add_argument("--base-url", default=None, help="API base URL for the judge provider (e.g. a local server)")
    p.add_argument("--advantage", type=float, default=None,
                   help="response advantage A: with --tokenizer, adds token_weights and token_offsets")
    p.add_argument("--tokenizer", type=Path, default=None, help="a Hugging Face tokenizer directory (with --advantage)")
    add_config_options(p)


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} file {path} does not exist; pass an existing path") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{what} file {path} is not UTF-8 text ({e.reason} at byte {e.start}); re-save it as UTF-8") from None
    except OSError as e:
        raise InputError(f"{what} file {path} cannot be read ({e.strerror}); check the path and permissions") from None


def _read_json(path: Path, what: str) -> Any:
    text = _read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{what} file {path} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                         "fix the JSON") from None


def load_task(path: Path) -> Any:
    return task_from_data(_read_json(path, "task"), f"task file {path}")


def task_from_data(data: Any, where: str) -> Any:
    """A ``Task`` from parsed JSON; ``where`` names the input in the error (a file, a request field)."""
    from pydantic import ValidationError

    from schemas.rubric import Task

    try:
        task = Task.model_validate(data)
    except ValidationError as e:
        msgs = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in e.errors()[:5])
        raise InputError(f"{where} does not match the task format ({msgs}); expected "
                         '{"query_id", "query", "rubric": {"initial_state": [{"id","requirement","level"}], '
                         '"dynamic": [...]}} with level one of core_module, correct_rule, rendering_effect') from None
    ids = [i.id for i in [*task.rubric.initial_state, *task.rubric.dynamic]]
    if len(set(ids)) != len(ids):
        raise InputError(f"{where} repeats rubric ids {sorted({i for i in ids if ids.count(i) > 1})}; "
                         "give every item a unique id")
    return task


def run(args: argparse.Namespace) -> int:
    from schemas.config import load_config
    from schemas.config.train import RULE_OF_MODE
    from tasks.env.judge_diagnosis import parse_diagnosis
    from tasks.env.score import score_response

    if (args.advantage is None) != (args.tokenizer is None):
        print("rubricrl score: token weights need both --advantage A and --tokenizer DIR; pass both or neither",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.tokenizer is not None and not (args.tokenizer / "tokenizer.json").exists():
        print(f"rubricrl score: tokenizer directory {args.tokenizer} has no tokenizer.json; pass a Hugging Face "
              "tokenizer directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        task = load_task(args.task)
        response = _read_text(args.response, "response")
        diagnosis = None
        if args.diagnosis is not None:
            try:
                diagnosis, _ = parse_diagnosis(_read_json(args.diagnosis, "diagnosis"), task.rubric)
            except ValueError as e:
                raise InputError(f"diagnosis file {args.diagnosis}: {e}") from None
    except InputError as e:
        print(f"rubricrl score: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        project = load_config(args.profile, sets=args.set)
    except ValueError as e:
        print(f"rubricrl score: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cfg = project.env
    if args.no_browser:
        cfg = cfg.model_copy(update={"runtime": cfg.runtime.model_copy(update={"enabled": False})})
    provider = None
    if diagnosis is None:
        from tasks.llm import get_provider

        try:
            # the project's LLM settings, the cache and ledger under the data directory like every other entry point
            provider = get_provider(args.provider, model=args.model, base_url=args.base_url,
                                    config=project.resolved_llm())
        except ValueError as e:
            print(f"rubricrl score: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        result = score_response(task, response, diagnosis=diagnosis, provider=provider, cfg=cfg,
                                reward_kind=args.reward, attribution=project.attribution)
    except ValueError as e:  # e.g. no browser installed: the message names the fix
        print(f"rubricrl score: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    tokenizer = None if args.tokenizer is None else load_tokenizer(args.tokenizer)
    out = score_output(result, response, args.advantage, tokenizer, project.attribution,
                       RULE_OF_MODE[project.train.objective.mode])
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return EXIT_OK


def load_tokenizer(path: Path) -> Any:
    from tasks.attribution.tokens import load_tokenizer as load

    return load(path)


def score_output(result: Any, response: str, advantage: float | None, tokenizer: Any, attribution: Any,
                 rule: str = "sign") -> dict[str, Any]:
    """What ``rubricrl score`` prints for one scored response (``rubricrl serve-env`` answers the same): the
    contract of ``ScoreResult.to_json``, the tier that decided the reward, and with an advantage and a
    tokenizer the token weights by ``rule`` (the trainer's: train.objective.mode's)."""
    from tasks.env.score_tables import tier

    out = result.to_json()
    out["tier"] = tier(result)
    if advantage is not None and tokenizer is not None:
        out.update(token_fields(response, result, advantage, tokenizer, attribution, rule))
    return out


def token_fields(response: str, result: Any, advantage: float, tok: Any, attribution: Any,
                 rule: str = "sign") -> dict[str, Any]:
    """``token_weights`` / ``token_offsets`` (response character offsets) and ``weight_rule``: the weights of
    ``tasks.attribution.weights`` by ``rule`` with the ``attribution`` section's numbers (paper 3.5); ``tok`` is
    a ``tokenizers.Tokenizer``."""
    from tasks.attribution.api import AttributionTrace, token_weights
    from tasks.attribution.tokens import token_offsets_array

    ids = tok.encode(response, add_special_tokens=False).ids
    offsets = token_offsets_array(ids, tok, expected_text=response)
    spans = [[int(a), int(b)] for a, b in offsets]
    if result.reward is None:  # missing diagnosis: no reward, the response is dropped from its group (B.4)
        return {"token_weights": None, "token_offsets": spans, "weight_rule": rule}
    # no HTML, or gates decided without findings: empty attribution sets, ordinary sign rule
    trace = result.attribution if result.attribution is not None else AttributionTrace(h=0, source_len=0)
    weights = token_weights(trace, offsets, float(advantage), attribution, rule)  # type: ignore[arg-type]
    return {"token_weights": [round(float(w), 6) for w in weights], "token_offsets": spans, "weight_rule": rule}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rubricrl score", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
