"""How a stage's great-expectations suite is described: one or more frames derived from the stage
table (list columns are exploded into their own frame), each with a suite built in code."""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Callable

import pyarrow as pa

if TYPE_CHECKING:  # GX (seconds, ~280 MB) loads when a suite is built: a scorer or a job reading a schema never pays it
    import great_expectations as gx
    import pandas as pd


@dataclass
class FrameSuite:
    frame: str
    build: Callable[[pa.Table], pd.DataFrame]
    suite: gx.ExpectationSuite
    id_columns: list[str]


def rows(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas()


def exploded(id_column: str, list_column: str, as_name: str) -> Callable[[pa.Table], pd.DataFrame]:
    """One row per list element, keeping the row id so failures name their rows."""

    def build(table: pa.Table) -> pd.DataFrame:
        df = table.select([id_column, list_column]).to_pandas().explode(list_column)
        return df.rename(columns={list_column: as_name}).reset_index(drop=True)

    return build


def expectations() -> ModuleType:
    """GX's expectation classes (``E.ExpectColumnValuesToNotBeNull``...), imported when a suite is built."""
    import great_expectations as gx

    return gx.expectations


def suite(name: str, *expectations: gx.expectations.Expectation) -> gx.ExpectationSuite:
    import great_expectations as gx
    # Built without a data context (passing expectations to the constructor needs none).
    return gx.ExpectationSuite(name=name, expectations=list(expectations))
