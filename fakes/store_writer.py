"""A process that hammers one CallStore with cache puts and ledger rows (for the concurrency and
kill -9 tests). Usage: python -m fakes.store_writer STORE_PATH TAG N"""
from __future__ import annotations

import sys

from tasks.llm.cache import CallStore


def main() -> None:
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = CallStore(path)
    for i in range(n):
        store.put(f"{tag}-{i}", "p", "m", f"text {i}", {"input_tokens": i}, latency_s=0.0)
        store.add_ledger_row({"run_id": tag, "i": i})
        if i == 0:
            print("started", flush=True)


if __name__ == "__main__":
    main()
