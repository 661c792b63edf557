import json
import os

import pyarrow as pa
import pytest

from tasks.stages.store import StageNotFound, StageStore

SCHEMA = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("v", pa.int64())])


def _rows(ids):
    return pa.table({"id": [str(i) for i in ids], "v": list(ids)}, schema=SCHEMA)


def _publish(build):
    return build.publish(provider="offline", config_hash="c", inputs={}, config={}, validation={"success": True})


def test_unpublished_stage_does_not_exist_for_readers(tmp_path):
    store = StageStore(tmp_path)
    build = store.begin("s", "fp1", SCHEMA)
    build.write_part("a", _rows([1, 2]))
    with pytest.raises(StageNotFound, match="run the flow"):
        store.read("s")
    man = _publish(build)
    assert man.row_count == 2 and store.read("s").num_rows == 2
    assert store.is_current("s", "fp1") and not store.is_current("s", "fp2")


def test_resume_keeps_written_parts_and_drops_half_written_temp_files(tmp_path):
    store = StageStore(tmp_path)
    b1 = store.begin("s", "fp1", SCHEMA)
    b1.write_part("c0", _rows([1]))
    (b1.dir / ".part-c1.parquet.tmp-999").write_bytes(b"half a file")  # a writer killed mid-write
    b2 = store.begin("s", "fp1", SCHEMA)
    assert b2.part_keys() == {"c0"}
    assert not list(b2.dir.glob(".*tmp*"))


def test_build_for_another_fingerprint_is_discarded(tmp_path):
    store = StageStore(tmp_path)
    store.begin("s", "old", SCHEMA).write_part("c0", _rows([1]))
    b = store.begin("s", "new", SCHEMA)
    assert b.part_keys() == set()
    assert not (store.stage_dir("s") / "_build-old").exists()


def test_kill_between_rename_and_manifest_recovers_parts(tmp_path):
    store = StageStore(tmp_path)
    b = store.begin("s", "fp1", SCHEMA)
    b.write_part("c0", _rows([1, 2, 3]))
    os.replace(b.dir, store.stage_dir("s") / "v-fp1")  # what publish does before writing the manifest
    assert store.manifest("s") is None
    b2 = store.begin("s", "fp1", SCHEMA)
    assert b2.part_keys() == {"c0"}
    assert _publish(b2).row_count == 3


def test_republish_replaces_old_version(tmp_path):
    store = StageStore(tmp_path)
    b = store.begin("s", "fp1", SCHEMA)
    b.write_part("c0", _rows([1]))
    _publish(b)
    b = store.begin("s", "fp2", SCHEMA)
    b.write_part("c0", _rows([1, 2]))
    man = _publish(b)
    assert [p.name for p in store.stage_dir("s").glob("v-*")] == [man.version]
    assert store.read("s").num_rows == 2


def test_schema_mismatch_is_a_clear_error(tmp_path):
    b = StageStore(tmp_path).begin("s", "fp", SCHEMA)
    with pytest.raises(ValueError, match="missing \\['v'\\]"):
        b.write_part("c0", pa.table({"id": ["x"]}))


def test_corrupt_parquet_part_names_the_file_and_the_fix(tmp_path):
    store = StageStore(tmp_path)
    b = store.begin("s", "fp", SCHEMA)
    b.write_part("c0", _rows([1]))
    man = _publish(b)
    part = store.stage_dir("s") / man.version / man.parts[0]
    part.write_bytes(b"PAR1 garbage")
    with pytest.raises(ValueError, match="unreadable.*re-run the stage's flow"):
        store.read("s")


def test_corrupt_manifest_is_a_clear_error(tmp_path):
    store = StageStore(tmp_path)
    (store.stage_dir("s")).mkdir(parents=True)
    (store.stage_dir("s") / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="corrupt"):
        store.manifest("s")


def test_manifest_records_provenance(tmp_path):
    store = StageStore(tmp_path)
    b = store.begin("s", "fp", SCHEMA)
    b.write_part("c0", _rows([1]))
    man = _publish(b)
    data = json.loads((store.stage_dir("s") / "manifest.json").read_text())
    for key in ("row_count", "schema_hash", "config_hash", "inputs", "code_version", "created_at", "provider"):
        assert key in data
    assert data["provider"] == "offline" and man.parts == ["part-c0.parquet"]
