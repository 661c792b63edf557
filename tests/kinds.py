"""Tests sorted by kind: the one table of which kinds each test file is, and the rules built on it.

``KINDS`` gives every ``tests/test_*.py`` its pytest markers (registered in pyproject.toml):

- ``unit``: pure logic and in-process work (no Prefect server, no browser, no training job);
- ``property``: hypothesis properties;
- ``wire``: the real anthropic/openai SDK against the local fakes in fakes/;
- ``flows``: Prefect flows end to end on the offline provider (the session's test server);
- ``browser``: real headless Chromium, or the sandbox's CDN mirror;
- ``training``: the tiny policy trained on CPU; ``deepspeed``: through a DeepSpeed engine;
- ``vllm``: vLLM on CPU (a rollout engine or an OpenAI-compatible server);
- ``gpu``: needs CUDA (none here; ``training/gpu_check.sh`` is the GPU check).

``make test-fast`` (``pytest --fast``) runs the tests whose kinds are all in ``FAST``, the edit-run loop;
``make test`` runs everything. A test of a kind in ``MUST_RUN_IN_CI`` that skips while ``CI=true`` fails instead: in CI such
a skip means an install step is missing (``make setup``: the Python pins, scripts/setup-system.sh).
A file may add a kind to one of its tests with a decorator (``@pytest.mark.browser``).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FAST = ("unit", "property", "wire")
SLOW = ("flows", "browser", "training", "deepspeed", "vllm", "gpu")
MUST_RUN_IN_CI = ("browser", "vllm", "deepspeed")
# Under `make test`'s two workers (xdist ``-n 2``, scheduled by ``pytest_xdist_make_scheduler`` below) the files of
# these kinds all run on one worker, one after another: each trains or serves a model in several GB and several
# processes, and two at once would starve each other (and the machine's memory). Every other file's tests stay
# together on one worker, so its module fixtures (a browser, a scored batch) are made once. Files go out longest
# kinds first (ORDER), so the models' group starts at once and the short files fill in beside it.
XDIST_GROUPS = {"training": "models", "deepspeed": "models", "vllm": "models", "gpu": "models"}
ORDER = ("training", "deepspeed", "vllm", "flows", "browser")

KINDS: dict[str, tuple[str, ...]] = {
    "test_adapter_openrlhf.py": ("browser", "wire"),
    "test_adapter_trl.py": ("browser", "training"),
    "test_adapter_verl.py": ("browser", "wire"),
    "test_attr_g2.py": ("unit",),
    "test_attr_locate.py": ("unit", "property"),
    "test_attr_queries.py": ("unit",),
    "test_attr_scope.py": ("unit", "property"),
    "test_attr_tokens.py": ("unit", "property"),
    "test_attr_tokens_fast.py": ("property",),
    "test_bench_devset.py": ("unit",),
    "test_blank_drawing.py": ("browser",),
    "test_checkpoints.py": ("unit",),
    "test_capability_checks.py": ("unit",),
    "test_capability_phrases.py": ("unit",),
    "test_checks_browser.py": ("browser",),
    "test_checks_flow.py": ("flows", "browser"),
    "test_checks_rubrics.py": ("flows", "browser"),
    "test_checks_schema.py": ("unit",),
    "test_checks_time.py": ("browser",),
    "test_cli_readme.py": ("flows", "wire"),
    "test_config.py": ("unit",),
    "test_control_tables.py": ("unit", "browser"),
    "test_cost.py": ("unit",),
    "test_demo_output.py": ("flows",),
    "test_deployment.py": ("flows",),
    "test_env_browser.py": ("browser",),
    "test_env_cli_cdn.py": ("unit",),
    "test_env_extract_static.py": ("unit",),
    "test_env_fingerprint.py": ("unit",),
    "test_env_flow.py": ("flows", "browser"),
    "test_env_gaps.py": ("unit",),
    "test_env_interaction.py": ("browser",),
    "test_env_judge_rewards.py": ("unit", "property", "wire"),
    "test_env_mirror.py": ("browser",),
    "test_env_observation.py": ("unit",),
    "test_env_package_openenv.py": ("browser",),
    "test_env_package_skyrl.py": ("browser",),
    "test_env_package_trl.py": ("browser", "training"),
    "test_env_package_verifiers.py": ("browser", "wire"),
    "test_env_pipelined.py": ("browser",),
    "test_env_probe_units.py": ("unit",),
    "test_env_sandbox.py": ("browser",),
    "test_env_severity.py": ("unit",),
    "test_mirror_serve.py": ("unit", "browser"),
    "test_load_errors.py": ("browser",),
    "test_env_verdicts.py": ("browser",),
    "test_score_golden.py": ("browser",),
    "test_eval_agreement.py": ("unit",),
    "test_eval_report.py": ("flows", "browser"),
    "test_evaluation.py": ("browser",),
    "test_export_tasks.py": ("unit",),
    "test_ext_lock.py": ("unit",),
    "test_fake_latency.py": ("wire",),
    "test_flow_evaluate.py": ("flows", "browser", "training", "deepspeed"),
    "test_flow_official.py": ("flows", "browser"),
    "test_flow_select.py": ("flows", "training", "deepspeed"),
    "test_flow_synthesize.py": ("flows",),
    "test_flow_train_rl.py": ("flows", "training", "deepspeed"),
    "test_flow_train_sft.py": ("flows", "training", "deepspeed"),
    "test_import_cycles.py": ("unit",),
    "test_ingest.py": ("unit",),
    "test_judge_undecided.py": ("unit",),
    "test_kinds.py": ("unit",),
    "test_layout.py": ("unit",),
    "test_learn_env.py": ("flows", "browser", "training", "deepspeed"),
    "test_load_clock.py": ("browser",),
    "test_llm_batch.py": ("unit", "wire"),
    "test_llm_store.py": ("unit",),
    "test_llm_structured.py": ("unit", "wire"),
    "test_llm_text.py": ("unit",),
    "test_llm_wire.py": ("wire",),
    "test_official_judge.py": ("wire",),
    "test_official_pft.py": ("browser",),
    "test_open_judge_vllm.py": ("flows", "vllm"),
    "test_output_format.py": ("browser",),
    "test_paid_keys.py": ("unit",),
    "test_probe_records.py": ("unit",),
    "test_probe_cut.py": ("browser",),
    "test_probe_time.py": ("browser",),
    "test_progress.py": ("unit",),
    "test_prompt_html.py": ("unit",),
    "test_resume_kill.py": ("flows",),
    "test_readme_map.py": ("unit",),
    "test_rubrics_fields.py": ("unit",),
    "test_rubrics_flow.py": ("flows",),
    "test_rubrics_offline.py": ("unit", "browser"),
    "test_rubrics_q5.py": ("flows",),
    "test_rubrics_resume_kill.py": ("flows",),
    "test_rubrics_units.py": ("unit",),
    "test_rubrics_vocab.py": ("unit",),
    "test_run_summary.py": ("unit",),
    "test_schemas_layout.py": ("unit",),
    "test_score_attribution.py": ("unit", "wire"),
    "test_score_step.py": ("unit",),
    "test_score_step_stream.py": ("flows", "browser", "wire"),
    "test_score_step_weights.py": ("flows",),
    "test_selection.py": ("unit",),
    "test_service_http.py": ("browser", "wire"),
    "test_service_load.py": ("browser",),
    "test_session_records.py": ("unit",),
    "test_service_requests.py": ("unit",),
    "test_service_scores.py": ("unit",),
    "test_sizes.py": ("unit",),
    "test_browser_profile.py": ("unit",),
    "test_sft_data.py": ("unit",),
    "test_store.py": ("unit",),
    "test_store_faults.py": ("unit", "flows"),
    "test_synthesize.py": ("unit",),
    "test_train_ablation.py": ("training", "deepspeed"),
    "test_train_invariance.py": ("training", "deepspeed"),
    "test_train_jobs.py": ("unit",),
    "test_train_loop.py": ("training", "deepspeed"),
    "test_train_objective.py": ("unit",),
    "test_train_plots.py": ("unit",),
    "test_train_sft.py": ("training", "deepspeed"),
    "test_train_stream.py": ("training", "deepspeed"),
    "test_train_stream_ray.py": ("training",),
    "test_train_vllm.py": ("training", "deepspeed", "vllm"),
    "test_validation.py": ("unit",),
    "test_validation_gates.py": ("unit",),
    "test_verdict_load.py": ("browser",),
    "test_vllm_server.py": ("unit", "wire"),
}


def table_problems(tests: Path = TESTS, kinds: dict[str, tuple[str, ...]] = KINDS,
                   registered: set[str] | None = None) -> list[str]:
    """What is wrong with the table: a test file without kinds, a row without a file, an unknown kind."""
    files = {p.name for p in tests.glob("test_*.py")}
    out = [f"{name} has no kinds: add it to KINDS in tests/kinds.py" for name in sorted(files - set(kinds))]
    out += [f"KINDS names {name}, which does not exist: remove its row" for name in sorted(set(kinds) - files)]
    out += [f"{name}: {k!r} is not a kind (one of {', '.join(FAST + SLOW)})" for name, ks in sorted(kinds.items())
            for k in ks if k not in FAST + SLOW]
    if registered is not None:
        out += [f"kind {k!r} is not a marker in pyproject.toml: register it" for k in FAST + SLOW if k not in registered]
    return out


def in_ci(environ: dict[str, str] | os._Environ = os.environ) -> bool:
    return environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def ci_skip_failure(kinds: set[str], reason: str, environ: dict[str, str] | os._Environ = os.environ) -> str | None:
    """The failure a skipped test of these kinds is in CI (None: the skip stands)."""
    needs = sorted(kinds & set(MUST_RUN_IN_CI))
    if not needs or not in_ci(environ):
        return None
    return (f"skipped in CI ({', '.join(needs)} test): {reason}. In CI a skip means an install step is missing: "
            "run `make setup` (the Python pins and scripts/setup-system.sh) in the CI image")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fast", action="store_true",
                     help=f"only tests whose kinds are all {', '.join(FAST)} (make test-fast; tests/kinds.py)")


def pytest_configure(config: pytest.Config) -> None:
    registered = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    problems = table_problems(registered=registered)
    if problems:
        raise pytest.UsageError("tests/kinds.py:\n  " + "\n  ".join(problems))


def _kinds(item: pytest.Item) -> set[str]:
    return {m.name for m in item.iter_markers()}


def xdist_group(path: str) -> str:
    """The worker group of a test file (its path in a node id): "models" for the kinds that must run one at a time
    (XDIST_GROUPS), else the file itself."""
    kinds = KINDS.get(Path(path).name, ())
    return next((XDIST_GROUPS[k] for k in kinds if k in XDIST_GROUPS), path)


def _order(item: pytest.Item) -> int:
    kinds = KINDS.get(item.path.name, ())
    return min((ORDER.index(k) for k in kinds if k in ORDER), default=len(ORDER))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_order)  # stable: a file's tests keep their order
    for item in items:
        if item.path.parent == TESTS:
            for kind in KINDS.get(item.path.name, ()):
                item.add_marker(kind)
    if config.getoption("fast"):
        dropped = [i for i in items if _kinds(i) & set(SLOW)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if not _kinds(i) & set(SLOW)]


def _reason(longrepr: object) -> str:
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        failure = ci_skip_failure(_kinds(item), _reason(report.longrepr))
        if failure is not None:
            report.outcome, report.longrepr = "failed", failure
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A whole test file skipped while collecting it (``pytest.importorskip`` at module level)."""
    report = yield
    if report.skipped and isinstance(collector, pytest.Module) and collector.path.parent == TESTS:
        failure = ci_skip_failure(set(KINDS.get(collector.path.name, ())), _reason(report.longrepr))
        if failure is not None:
            report.outcome, report.longrepr = "failed", failure
    return report


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Whole files to a worker, the models' files as one unit (``xdist_group``), in the collection's order (longest
    kinds first). xdist's own ``loadgroup`` cannot do it: it renames node ids, which pytest 9 no longer lets it."""
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False
    return FileGroups(config, log)
