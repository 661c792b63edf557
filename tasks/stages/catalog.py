"""``data/catalog.duckdb``: one view per published stage over its Parquet parts.

Refreshed after every publish. Open it with ``duckdb data/catalog.duckdb`` or ``rubricrl sql``; a query DuckDB
refuses raises ``QueryError`` with DuckDB's message and what helps next (the views, a damaged part's rebuild).
"""
from __future__ import annotations

import errno
import logging
import os
import re
import uuid
from pathlib import Path

import duckdb

from schemas.layout import CATALOG
from tasks.stages.files import disk_full
from tasks.stages.store import StageStore

log = logging.getLogger(__name__)
# The file is written in the storage format of the pinned ``duckdb`` CLI (pyproject: duckdb-cli==1.5.6), so
# ``.venv/bin/duckdb data/catalog.duckdb`` opens it; the Python package (2.x) reads and writes that format too.
STORAGE_VERSION = "v1.5.0"


def _connect(path: Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    config = {} if read_only else {"storage_compatibility_version": STORAGE_VERSION}
    return duckdb.connect(str(path), read_only=read_only, config=config)


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def refresh_catalog(store: StageStore) -> Path:
    """Write the catalog anew, one view per published stage, and rename it over the old one: a reader (or the
    DuckDB CLI holding it open) always sees a whole catalog, and a full disk leaves the old one in place. A
    stage whose parts fail their manifest check gets no view (a warning names the part and the rebuild)."""
    path = store.root / CATALOG
    store.root.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{CATALOG}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        con = _connect(tmp)
        try:
            for man in store.published():
                faults = store.faults(man.stage)
                if faults:
                    log.warning("no view for %s", "; ".join(faults))
                    continue
                files = ", ".join(_quote(f) for f in store.files(man.stage))
                con.execute(f'CREATE VIEW "{man.stage}" AS SELECT * FROM read_parquet([{files}])')
        finally:
            con.close()
        os.replace(tmp, path)
    except (duckdb.IOException, OSError) as e:
        if not _no_space(e):
            raise
        raise disk_full(store.root, _catalog_bytes(path), f"the catalog {path} (the old one is kept)") from e
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
    return path


def _no_space(e: BaseException) -> bool:
    return getattr(e, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "no space left" in str(e).lower()


def _catalog_bytes(path: Path) -> int:
    # a catalog of views is about the size of the last one (a fresh one is written before the old goes)
    return path.stat().st_size if path.exists() else 1 << 20


def views(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND "
                                      "schema_name = 'main' ORDER BY 1").fetchall()]


class QueryError(ValueError):
    """A query DuckDB refused, with DuckDB's own message (and what helps: the views, a damaged part)."""


def query(store: StageStore, sql: str) -> tuple[list[str], list[tuple]]:
    path = store.root / CATALOG
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist yet; run `make run` (or any flow) first")
    try:
        con = _connect(path, read_only=True)
    except duckdb.IOException as e:
        raise QueryError(f"{path} cannot be opened ({str(e).strip()}); close the DuckDB session that holds it "
                         "open for writing, or run `rubricrl catalog` to write a fresh one beside it") from None
    try:
        try:
            cur = con.execute(sql)
            cols = [d[0] for d in cur.description] if cur.description else []
            return cols, cur.fetchall()
        except duckdb.Error as e:
            raise QueryError(explain(str(e), views(con), store)) from None
    finally:
        con.close()


def explain(message: str, view_names: list[str], store: StageStore) -> str:
    """DuckDB's message, then what a user needs next: the views when a table is unknown (and why a published
    stage has none), the rebuild command when a file of a stage cannot be read."""
    out = [message.strip()]
    missing = re.search(r'Table with name "?([^"\s!]+)"? does not exist', message)
    if missing:
        name = missing.group(1)
        out.append(f"views in {store.root / CATALOG}: {', '.join(view_names) or 'none yet (run a flow first)'}")
        out += store.faults(name) if store.manifest(name) is not None else []
        return "\n".join(out)
    for m in store.published():
        if str(store.stage_dir(m.stage)) in message:
            out += store.faults(m.stage) or [f"stage {m.stage!r}: {m.rebuild_hint()}"]
    return "\n".join(out)


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
