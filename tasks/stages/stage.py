"""Run one stage: skip if current, resume a killed build, make missing parts, validate, publish.

``make_part(key) -> pa.Table`` is whatever produces one part (the flow passes a Prefect task);
parts that already exist from an interrupted build with the same fingerprint are kept.
Nothing is published unless the stage's GX suites pass. The build holds the data directory's lock
(``tasks/stages/lock.py``); a disk that fills up stops it with ``DiskFull`` naming the space the rest
of the stage needs, and the same command run again resumes from the parts written whole.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

import pyarrow as pa

from schemas.contracts.validation import FrameSuite
from schemas.layout import VALIDATION
from tasks.progress import Progress
from tasks.stages.catalog import refresh_catalog
from tasks.stages.files import DiskFull, disk_full, human_bytes
from tasks.stages.lock import data_dir_lock
from tasks.stages.store import Manifest, StageBuild, StageStore, fingerprint, schema_hash
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
    with data_dir_lock(store.root):
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
            log.info("%s: resuming, %d of %d parts already written", spec.name, len(existing & set(part_keys)),
                     len(part_keys))
        _make_parts(build, todo, make_part)
        table = build.read()
        report = run_suites(spec.name, table, spec.suites(), store.root / VALIDATION, version=fp)
        if not report.success:
            raise StageValidationError(report)
        st = stats(table) if stats else {}
        man = build.publish(provider=provider, config_hash=config_hash, inputs=inputs, config=config,
                            validation={"success": True, "summary": report.summary(), "report": report.path},
                            stats=st)
        refresh_catalog(store)
    log.info("%s: published %d rows as %s", spec.name, man.row_count, man.version)
    return StageOutcome(man, skipped=False, resumed_parts=len(existing & set(part_keys)), made_parts=len(todo),
                        report=report, stats=st)


def _make_parts(build: StageBuild, todo: list[str], make_part: Callable[[str], pa.Table]) -> None:
    """Write the missing parts in order; a full disk names what the rest of the stage still needs."""
    progress = Progress(build.stage, len(todo), unit="parts", verb="written") if len(todo) > 1 else None
    try:
        for i, key in enumerate(todo):
            try:
                build.write_part(key, make_part(key))
            except DiskFull as e:
                raise _stage_disk_full(build, e, todo[i:]) from e
            if progress is not None:
                progress.update(1)
    finally:
        if progress is not None:
            progress.close()


def _stage_disk_full(build: StageBuild, e: DiskFull, left: list[str]) -> DiskFull:
    """The part's ``DiskFull`` widened to the stage: the mean size of the parts written so far x those left."""
    sizes = [build.part_path(k).stat().st_size for k in build.part_keys()]
    need = int(sum(sizes) / len(sizes) * len(left)) if sizes else e.needed_bytes * len(left)
    return disk_full(e.directory, need, f"stage {build.stage!r} ({len(sizes)} parts written whole and kept, "
                                        f"{len(left)} to go at about {human_bytes(need / len(left))} each)")
