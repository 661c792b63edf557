"""Run a stage's great-expectations suites and keep the results (JSON) under ``data/validation/``.

A failing suite raises ``StageValidationError`` naming each failed expectation and sample bad rows;
the stage is then not published.
"""
from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.contracts.validation import FrameSuite
from tasks.stages.files import atomic_write_bytes

log = logging.getLogger(__name__)
SAMPLE = 5


@dataclass
class ExpectationOutcome:
    """One expectation's result. The bad rows (``unexpected_count``, ``sample_rows``) are read only for a frame
    that failed: a passed expectation counts none (with ``mostly`` below 1 it may have had some)."""
    frame: str
    expectation: str
    column: str | None
    success: bool
    unexpected_count: int
    sample_rows: list[Any] = field(default_factory=list)


@dataclass
class ValidationReport:
    stage: str
    success: bool
    row_count: int
    outcomes: list[ExpectationOutcome]
    path: str = ""

    @property
    def failed(self) -> list[ExpectationOutcome]:
        return [o for o in self.outcomes if not o.success]

    def summary(self) -> str:
        ok = sum(o.success for o in self.outcomes)
        return f"{ok}/{len(self.outcomes)} expectations passed on {self.row_count} rows"

    def describe_failures(self) -> str:
        lines = [f"stage {self.stage!r} failed validation ({self.summary()}); it was not published:"]
        for o in self.failed:
            col = f" on {o.column!r}" if o.column else ""
            lines.append(f"  - {o.frame}: {o.expectation}{col}: {o.unexpected_count} bad rows, e.g. {o.sample_rows}")
        if self.path:
            lines.append(f"  full report: {self.path}")
        return "\n".join(lines)


class StageValidationError(ValueError):
    def __init__(self, report: ValidationReport) -> None:
        super().__init__(report.describe_failures())
        self.report = report


def _clean(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def run_suites(stage: str, table: pa.Table, suites: list[FrameSuite], report_dir: Path | None = None,
               version: str = "") -> ValidationReport:
    import great_expectations as gx

    ctx = gx.get_context(mode="ephemeral")
    try:
        ctx.variables.progress_bars = {"globally": False, "metric_calculations": False}
    except (AttributeError, TypeError, ValueError):
        log.debug("this great-expectations version has no progress_bars switch")
    source = ctx.data_sources.add_pandas(f"{stage}-source")
    outcomes: list[ExpectationOutcome] = []
    for fs in suites:
        df = fs.build(table)
        asset = source.add_dataframe_asset(fs.frame)
        batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": df})
        # the verdict alone first (about 0.6x the time); the bad rows are fetched only for a frame that failed
        result = batch.validate(fs.suite, result_format={"result_format": "BOOLEAN_ONLY"})
        if not result.success:
            result = batch.validate(fs.suite, result_format={"result_format": "COMPLETE",
                                                             "unexpected_index_column_names": fs.id_columns})
        for r in result.results:
            res = r.result or {}
            sample = res.get("unexpected_index_list") or res.get("partial_unexpected_list") or []
            if not r.success and not sample and "observed_value" in res:
                sample = [{"observed_value": res["observed_value"]}]
            outcomes.append(ExpectationOutcome(
                frame=fs.frame, expectation=r.expectation_config.type,
                column=r.expectation_config.kwargs.get("column"), success=bool(r.success),
                unexpected_count=int(res.get("unexpected_count") or (0 if r.success else 1)),
                sample_rows=_clean(list(sample)[:SAMPLE]),
            ))
    report = ValidationReport(stage, all(o.success for o in outcomes), table.num_rows, outcomes)
    if report_dir is not None:
        path = report_dir / stage / f"{version or 'latest'}.json"
        atomic_write_bytes(path, json.dumps(asdict(report), indent=2, default=str).encode())
        report.path = str(path)
    return report
