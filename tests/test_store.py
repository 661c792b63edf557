import json
import os

import pyarrow as pa
import pytest

from tasks.stages.store import CorruptStage, StageNotFound, StageStore

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


def test_manifest_checksums_tell_a_corrupt_part_from_a_good_one(tmp_path):
    store = StageStore(tmp_path, rebuild_command="rubricrl run --only my-flow")
    b = store.begin("s", "fp", SCHEMA)
    b.write_part("c0", _rows([1, 2]))
    b.write_part("c1", _rows([3]))
    man = _publish(b)
    vdir = store.stage_dir("s") / man.version
    assert set(man.checksums) == {"part-c0.parquet", "part-c1.parquet"}
    assert store.faults("s") == [] and store.is_current("s", "fp")  # the twin: whole parts stay clean
    good = (vdir / "part-c0.parquet").read_bytes()
    (vdir / "part-c1.parquet").write_bytes(good[: len(good) // 2])  # truncated
    assert store.faults("s") == [f"stage 's': part {vdir / 'part-c1.parquet'} has {len(good) // 2} bytes where its "
                                 f"manifest records {man.checksums['part-c1.parquet']['bytes']} (truncated or "
                                 "overwritten); rebuild it with `rubricrl run --only my-flow`"]
    with pytest.raises(CorruptStage, match=r"part-c1\.parquet has .* rebuild it with `rubricrl run --only my-flow`"):
        store.read("s")
    assert not store.is_current("s", "fp")  # so a plain re-run of the flow rebuilds it
    size = man.checksums["part-c1.parquet"]["bytes"]
    (vdir / "part-c1.parquet").write_bytes(good[:size].ljust(size, b"\0"))  # same size, other bytes
    assert [f.split(" part ")[1].split(" ")[0] for f in store.faults("s")] == [str(vdir / "part-c1.parquet")]
    assert "sha256" in store.faults("s")[0]
    assert store.read_file("s", vdir / "part-c0.parquet").num_rows == 2  # the good part still reads


def test_unreadable_part_of_a_manifest_without_checksums_names_the_file(tmp_path):
    store = StageStore(tmp_path)
    b = store.begin("s", "fp", SCHEMA)
    b.write_part("c0", _rows([1]))
    man = _publish(b)
    data = json.loads((store.stage_dir("s") / "manifest.json").read_text())
    data["checksums"] = {}  # as written before manifests carried them
    (store.stage_dir("s") / "manifest.json").write_text(json.dumps(data))
    part = store.stage_dir("s") / man.version / man.parts[0]
    part.write_bytes(b"PAR1 garbage")
    with pytest.raises(CorruptStage, match=f"part {part} is unreadable .*rebuild it by running again the flow"):
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
