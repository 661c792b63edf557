"""``data/catalog.duckdb``: one view per published stage over its Parquet parts.

Refreshed after every publish. Open it with ``duckdb data/catalog.duckdb`` or ``rubricrl sql``.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import duckdb

from schemas.layout import CATALOG
from tasks.stages.store import StageStore

log = logging.getLogger(__name__)
# The file is written in the storage format of the pinned ``duckdb`` CLI (pyproject: duckdb-cli==1.5.6), so
# ``.venv/bin/duckdb data/catalog.duckdb`` opens it; the Python package (2.x) reads and writes that format too.
STORAGE_VERSION = "v1.5.0"


def _connect(path: Path, read_only: bool = False, attempts: int = 8) -> duckdb.DuckDBPyConnection:
    config = {} if read_only else {"storage_compatibility_version": STORAGE_VERSION}
    for i in range(attempts):
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.IOException as e:
            if "lock" not in str(e).lower() or i == attempts - 1:
                raise RuntimeError(f"{path} is locked by another process ({e}); close other duckdb sessions on it, "
                                   "then run `rubricrl catalog` to refresh the views") from e
            time.sleep(0.25 * (i + 1))
    raise AssertionError("unreachable")


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def refresh_catalog(store: StageStore) -> Path:
    """(Re)create one view per published stage; views of stages no longer published are dropped."""
    path = store.root / CATALOG
    store.root.mkdir(parents=True, exist_ok=True)
    con = _connect(path)
    if _storage_version(con) != f"{STORAGE_VERSION}+":
        # a catalog written by an older release of this code, in a format the CLI cannot read: it holds only
        # views, so it is rebuilt rather than migrated
        con.close()
        path.unlink()
        con = _connect(path)
    try:
        published = {m.stage: m for m in store.published()}
        existing = {r[0] for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'").fetchall()}
        for name in existing - set(published):
            con.execute(f'DROP VIEW IF EXISTS "{name}"')
        for stage in published:
            files = ", ".join(_quote(f) for f in store.files(stage))
            con.execute(f'CREATE OR REPLACE VIEW "{stage}" AS SELECT * FROM read_parquet([{files}])')
    finally:
        con.close()
    return path


def _storage_version(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT tags FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return (row[0] or {}).get("storage_version") if row else None


def query(store: StageStore, sql: str) -> tuple[list[str], list[tuple]]:
    path = store.root / CATALOG
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist yet; run `make run` (or any flow) first")
    con = _connect(path, read_only=True)
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()
    finally:
        con.close()


def format_table(cols: list[str], rows: list[tuple], max_width: int = 60) -> str:
    def cell(v: object) -> str:
        s = "NULL" if v is None else str(v)
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    cells = [[cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    line = "+".join("-" * (w + 2) for w in widths)
    out = [" | ".join(c.ljust(w) for c, w in zip(cols, widths)), line]
    out += [" | ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
