"""Run one stage: skip if current, resume a killed build, make missing parts, validate, publish.

``make_part(key) -> pa.Table`` is whatever produces one part (the flow passes a Prefect task);
parts that already exist from an interrupted build with the same fingerprint are kept.
Nothing is published unless the stage's GX suites pass.
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

import pyarrow as pa
from tqdm import tqdm

from schemas.layout import VALIDATION
from schemas.validation import FrameSuite
from tasks.stages.catalog import refresh_catalog
from tasks.stages.store import Manifest, StageStore, fingerprint, schema_hash
from tasks.stages.validate import StageValidationError, ValidationReport, run_suites

log = logging.getLogger("rubricrl.stage")
T = TypeVar("T")


def chunked(items: Sequence[T], size: int) -> dict[str, list[T]]:
    """Stable part keys: ``items`` cut into chunks of ``size``, keyed ``c00000``, ``c00001``, ..."""
    return {f"c{i // size:05d}": list(items[i:i + size]) for i in range(0, len(items), size)}


@dataclass
class StageSpec:
    name: str
    schema: pa.Schema
    suites: Callable[[], list[FrameSuite]]


@dataclass
class StageOutcome:
    manifest: Manifest
    skipped: bool
    resumed_parts: int = 0
    made_parts: int = 0
    report: ValidationReport | None = None
    stats: dict[str, Any] = field(default_factory=dict)


def stage_fingerprint(spec: StageSpec, config_hash: str, inputs: dict[str, str], extra: dict[str, Any]) -> str:
    return fingerprint(stage=spec.name, config=config_hash, inputs=inputs, schema=schema_hash(spec.schema), extra=extra)


def run_stage(store: StageStore, spec: StageSpec, *, part_keys: list[str], make_part: Callable[[str], pa.Table],
              provider: str, config: dict[str, Any], config_hash: str, inputs: dict[str, str],
              extra: dict[str, Any] | None = None, force: bool = False,
              stats: Callable[[pa.Table], dict[str, Any]] | None = None) -> StageOutcome:
    """Build ``spec`` from the parts named by ``part_keys`` (stable keys: chunk ids, query ids)."""
    fp = stage_fingerprint(spec, config_hash, inputs, extra or {})
    if not force and store.is_current(spec.name, fp):
        man = store.manifest(spec.name)
        assert man is not None
        log.info("%s: current (version %s, %d rows); nothing to do", spec.name, man.version, man.row_count)
        return StageOutcome(man, skipped=True)
    build = store.begin(spec.name, fp, spec.schema)
    if force:
        for key in build.part_keys():
            build.part_path(key).unlink()
    existing = build.part_keys()
    todo = [k for k in part_keys if k not in existing]
    if existing:
        log.info("%s: resuming, %d of %d parts already written", spec.name, len(existing & set(part_keys)), len(part_keys))
    for key in tqdm(todo, desc=spec.name, unit="part", disable=not todo or not sys.stderr.isatty()):
        build.write_part(key, make_part(key))
    table = build.read()
    report = run_suites(spec.name, table, spec.suites(), store.root / VALIDATION, version=fp)
    if not report.success:
        raise StageValidationError(report)
    st = stats(table) if stats else {}
    man = build.publish(provider=provider, config_hash=config_hash, inputs=inputs, config=config,
                        validation={"success": True, "summary": report.summary(), "report": report.path}, stats=st)
    refresh_catalog(store)
    log.info("%s: published %d rows as %s", spec.name, man.row_count, man.version)
    return StageOutcome(man, skipped=False, resumed_parts=len(existing & set(part_keys)), made_parts=len(todo),
                        report=report, stats=st)
