"""The stage store: Parquet parts written atomically, a manifest written last.

Layout under ``<data_dir>/stages/<stage>/``:

- ``_build-<fingerprint>/part-<key>.parquet`` — parts of a build in progress. Each part is written to
  a temp file, fsynced and renamed, so a part either exists whole or not at all. A build killed half
  way is resumed by the next run with the same fingerprint: existing parts are kept, missing ones made.
- ``v-<fingerprint>/`` — the published parts, and ``manifest.json`` beside them, written last.
  A stage without a manifest does not exist for readers. The manifest records each part's size and
  sha256 and the command that rebuilds it: a part that no longer matches is named, with the command
  that rebuilds it, before anyone reads it, and its stage is no longer current (a re-run rebuilds it).

Writes are atomic and a full disk leaves nothing half-written (``tasks/stages/files.py``); builds and
publishes hold the data directory's lock (``tasks/stages/lock.py``), so two runs never interleave parts.

The fingerprint covers what the stage's output depends on (config sections, input stage versions,
prompt versions, schema): the same fingerprint means re-running does no work.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.layout import STAGES
from tasks.stages.files import atomic_write_bytes, atomic_write_table, check_part, file_checksum, fsync_path

log = logging.getLogger(__name__)
_KEY_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class StageNotFound(LookupError):
    """Raised when a reader asks for a stage that has not been published."""


class CorruptStage(ValueError):
    """A published part is missing, truncated or overwritten: it differs from its manifest's size or sha256."""


def schema_hash(schema: pa.Schema) -> str:
    text = ",".join(f"{f.name}:{f.type}:{f.nullable}" for f in schema)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(**parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def code_version() -> str:
    """The git commit of the code that wrote a stage (recorded, not part of the fingerprint)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=5, cwd=Path(__file__).resolve().parent)
        if out.returncode == 0:
            return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return "rubricrl-" + version("rubricrl")
    except PackageNotFoundError:
        return "unknown"


def conform(table: pa.Table, schema: pa.Schema, stage: str) -> pa.Table:
    """Cast a table to the stage schema; a missing or extra column is a clear error."""
    missing = [n for n in schema.names if n not in table.column_names]
    extra = [n for n in table.column_names if n not in schema.names]
    if missing or extra:
        raise ValueError(f"stage {stage!r}: rows do not match schemas/ ({'missing ' + str(missing) if missing else ''}"
                         f"{' extra ' + str(extra) if extra else ''}); fix the producing task or the schema")
    return table.select(schema.names).cast(schema)


@dataclass
class Manifest:
    stage: str
    version: str
    fingerprint: str
    row_count: int
    schema_hash: str
    config_hash: str
    inputs: dict[str, str]
    code_version: str
    created_at: str
    provider: str
    parts: list[str]
    config: dict[str, Any] = field(default_factory=dict)
    validation: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    checksums: dict[str, dict[str, Any]] = field(default_factory=dict)  # part -> {"bytes", "sha256"}
    rebuild_command: str = ""  # the command that runs the publishing flow with the same settings ("": none known)

    def rebuild_hint(self) -> str:
        """How to rebuild this stage: its flow run again with the same settings. A stage whose parts fail their
        check is not current, so it is built again while its current neighbours are left alone."""
        return f"rebuild it with `{self.rebuild_command}`" if self.rebuild_command else \
            "rebuild it by running again the flow that published it"

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (json.JSONDecodeError, TypeError) as e:
            raise ValueError(f"manifest {path} is corrupt ({e}); delete it and re-run the stage's flow") from e


class StageBuild:
    """An in-progress (or resumed) build of one stage version."""

    def __init__(self, store: "StageStore", stage: str, fp: str, schema: pa.Schema) -> None:
        self.store, self.stage, self.fingerprint, self.schema = store, stage, fp, schema
        self.dir = store.stage_dir(stage) / f"_build-{fp}"
        self.dir.mkdir(parents=True, exist_ok=True)
        for stray in self.dir.glob(".*.tmp-*"):  # half-written parts of a killed process
            stray.unlink(missing_ok=True)

    def part_path(self, key: str) -> Path:
        if not _KEY_RE.match(key):
            raise ValueError(f"part key {key!r} must match {_KEY_RE.pattern}")
        return self.dir / f"part-{key}.parquet"

    def part_keys(self) -> set[str]:
        return {p.name[len("part-"):-len(".parquet")] for p in self.dir.glob("part-*.parquet")}

    def has_part(self, key: str) -> bool:
        return self.part_path(key).exists()

    def write_part(self, key: str, table: pa.Table) -> Path:
        path = self.part_path(key)
        atomic_write_table(path, conform(table, self.schema, self.stage))
        return path

    def read(self) -> pa.Table:
        files = sorted(self.dir.glob("part-*.parquet"))
        if not files:
            return self.schema.empty_table()
        return pa.concat_tables([pq.read_table(f, schema=self.schema) for f in files])

    def publish(self, *, provider: str, config_hash: str, inputs: dict[str, str], config: dict[str, Any],
                validation: dict[str, Any], stats: dict[str, Any] | None = None) -> Manifest:
        """Rename the build to its version directory, then write the manifest last."""
        if not self.part_keys():
            self.write_part("empty", self.schema.empty_table())
        sdir = self.store.stage_dir(self.stage)
        vdir = sdir / f"v-{self.fingerprint}"
        if vdir.exists():
            shutil.rmtree(vdir)
        os.replace(self.dir, vdir)
        fsync_path(sdir)
        parts = sorted(p.name for p in vdir.glob("part-*.parquet"))
        rows = sum(pq.ParquetFile(vdir / p).metadata.num_rows for p in parts)
        man = Manifest(stage=self.stage, version=vdir.name, fingerprint=self.fingerprint, row_count=rows,
                       schema_hash=schema_hash(self.schema), config_hash=config_hash, inputs=inputs,
                       code_version=code_version(), created_at=datetime.now(timezone.utc).isoformat(),
                       provider=provider, parts=parts, config=config, validation=validation, stats=stats or {},
                       checksums={p: file_checksum(vdir / p) for p in parts},
                       rebuild_command=self.store.rebuild_command)
        atomic_write_bytes(sdir / "manifest.json", json.dumps(asdict(man), indent=2, default=str).encode())
        for old in sdir.glob("v-*"):
            if old.name != vdir.name:
                shutil.rmtree(old, ignore_errors=True)
        return man


class StageStore:
    """``rebuild_command``: how the flow writing through this store is run again with its settings; each manifest
    records it, and readers of a damaged part name it."""

    def __init__(self, data_dir: Path | str, rebuild_command: str = "") -> None:
        self.root = Path(data_dir).resolve()
        self.stages_dir = self.root / STAGES
        self.rebuild_command = rebuild_command

    def stage_dir(self, stage: str) -> Path:
        return self.stages_dir / stage

    def manifest(self, stage: str) -> Manifest | None:
        path = self.stage_dir(stage) / "manifest.json"
        return Manifest.load(path) if path.exists() else None

    def stage_names(self) -> list[str]:
        """Every stage folder, published or not."""
        return sorted(d.name for d in self.stages_dir.iterdir() if d.is_dir()) if self.stages_dir.exists() else []

    def published(self) -> list[Manifest]:
        """The published stages; one whose manifest is damaged is left out with a warning naming the file."""
        out = []
        for name in self.stage_names():
            try:
                m = self.manifest(name)
            except ValueError as e:
                log.warning("%s", e)
                continue
            if m is not None:
                out.append(m)
        return out

    def is_current(self, stage: str, fp: str) -> bool:
        """Published with this fingerprint, and every part still matches its manifest."""
        man = self.manifest(stage)
        return (man is not None and man.fingerprint == fp and (self.stage_dir(stage) / man.version).is_dir()
                and not self.faults(stage))

    def faults(self, stage: str) -> list[str]:
        """One line per published part that is missing or differs from its recorded size or sha256 (naming the
        file and the command that rebuilds the stage); empty when every part is whole."""
        man = self.manifest(stage)
        if man is None:
            return []
        vdir = self.stage_dir(stage) / man.version
        return [f"stage {stage!r}: part {vdir / p} {problem}; {man.rebuild_hint()}"
                for p in man.parts if (problem := check_part(vdir / p, man.checksums.get(p)))]

    def version(self, stage: str) -> str:
        man = self.manifest(stage)
        if man is None:
            raise StageNotFound(f"stage {stage!r} is not published in {self.root}; run the flow that builds it first")
        return man.version

    def begin(self, stage: str, fp: str, schema: pa.Schema) -> StageBuild:
        """Start or resume the build for this fingerprint. Builds for other fingerprints are discarded."""
        sdir = self.stage_dir(stage)
        sdir.mkdir(parents=True, exist_ok=True)
        man = self.manifest(stage)
        orphan = sdir / f"v-{fp}"
        if orphan.exists() and (man is None or man.version != orphan.name):
            # killed between rename and manifest: the parts are complete, take them back
            os.replace(orphan, sdir / f"_build-{fp}")
        for other in sdir.glob("_build-*"):
            if other.name != f"_build-{fp}":
                shutil.rmtree(other, ignore_errors=True)
        return StageBuild(self, stage, fp, schema)

    def files(self, stage: str) -> list[Path]:
        man = self.manifest(stage)
        if man is None:
            raise StageNotFound(f"stage {stage!r} is not published in {self.root}; run the flow that builds it first")
        vdir = self.stage_dir(stage) / man.version
        return [vdir / p for p in man.parts]

    def read_file(self, stage: str, path: Path, columns: Iterable[str] | None = None) -> pa.Table:
        """One published part, checked against its manifest first; a bad part raises ``CorruptStage``."""
        man = self.manifest(stage)
        if man is None:
            raise StageNotFound(f"stage {stage!r} is not published in {self.root}; run the flow that builds it first")
        problem = check_part(path, man.checksums.get(path.name))
        fix = man.rebuild_hint()
        if problem:
            raise CorruptStage(f"stage {stage!r}: part {path} {problem}; {fix}")
        try:
            return pq.read_table(path, columns=list(columns) if columns else None)
        except (pa.ArrowInvalid, OSError) as e:  # a manifest without checksums (older) cannot tell beforehand
            raise CorruptStage(f"stage {stage!r}: part {path} is unreadable ({e}); {fix}") from e

    def read(self, stage: str, columns: Iterable[str] | None = None) -> pa.Table:
        tables = [self.read_file(stage, f, columns) for f in self.files(stage)]
        return pa.concat_tables(tables) if tables else pa.table({})
