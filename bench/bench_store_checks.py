"""bench_store_checks: what checking parts against their manifest costs (the sizes and sha256 every reader
checks before using a part, and ``is_current`` before skipping a stage).

Publishes one stage of ``--mb`` MB of Parquet parts (random strings, so zstd cannot shrink them), then times:
publish (writing the checksums), a read without any check (pyarrow alone), the first checked read in a fresh
process state, a second checked read (parts hashed already in this process are not hashed again), and
``is_current``; each the fastest of ``--repeat`` tries (a loaded machine adds noise, never speed). Prints
seconds and MB/s; asserts nothing.
Run: ``.venv/bin/python bench/bench_store_checks.py [--mb 256] [--parts 8]``.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import _safe  # noqa: F401 - the repo on sys.path

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.stages import files
from tasks.stages.store import StageStore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="stage size in MB")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows_per_part = args.mb * 1024 * 1024 // args.parts // 1024
    schema = pa.schema([pa.field("blob", pa.string())])
    with tempfile.TemporaryDirectory() as tmp:
        store = StageStore(Path(tmp))
        build = store.begin("blobs", "fp", schema)
        for k in range(args.parts):
            build.write_part(f"c{k}", pa.table({"blob": [os.urandom(384).hex()[:1024]
                                                         for _ in range(rows_per_part)]}, schema=schema))
        t = time.perf_counter()
        man = build.publish(provider="bench", config_hash="c", inputs={}, config={}, validation={})
        publish_s = time.perf_counter() - t
        size_mb = sum(c["bytes"] for c in man.checksums.values()) / 1e6

        def fastest(fn, fresh: bool = False) -> tuple[float, object]:
            best, out = float("inf"), None
            for _ in range(args.repeat):
                if fresh:
                    files._HASHED.clear()  # as a fresh process finds it
                t = time.perf_counter()
                out = fn()
                best = min(best, time.perf_counter() - t)
            return best, out

        raw_s, raw = fastest(lambda: sum(pq.read_table(f).num_rows for f in store.files("blobs")))
        first_s, checked = fastest(lambda: store.read("blobs").num_rows, fresh=True)
        second_s, _ = fastest(lambda: store.read("blobs").num_rows)
        current_s, current = fastest(lambda: store.is_current("blobs", "fp"), fresh=True)
    assert raw == checked and current
    print(f"stage: {size_mb:.0f} MB in {args.parts} parts, {raw:,} rows")
    for name, s in (("publish (hashing every part)", publish_s), ("read, pyarrow alone", raw_s),
                    ("read, checked (first in this process)", first_s), ("read, checked again", second_s),
                    ("is_current (hashing every part)", current_s)):
        print(f"  {name:<40} {s:7.3f} s   {size_mb / s:8.0f} MB/s")


if __name__ == "__main__":
    main()
