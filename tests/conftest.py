"""Shared fixtures. Prefect runs against one temporary test server per session; every test gets its
own data directory through RUBRICRL_DATA_DIR. The kinds of tests (markers, ``--fast``, the CI rule
for skips) are tests/kinds.py's hooks."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

_HOME = tempfile.mkdtemp(prefix="rubricrl-prefect-")
os.environ.setdefault("PREFECT_HOME", _HOME)
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
# The test server keeps what the tests read (flow runs, artifacts, logs). The services that turn every task run's
# events into rows and triggers take a quarter of its CPU on a flows test and nothing reads them here; the
# deployment tests run the full server as users do (`rubricrl serve`).
SERVICES_OFF = tuple(f"PREFECT_SERVER_SERVICES_{s}_ENABLED" for s in ("EVENT_PERSISTER", "TASK_RUN_RECORDER", "TRIGGERS"))
for _name in SERVICES_OFF:
    os.environ.setdefault(_name, "false")
from tasks.llm.paid import drop_paid_keys  # noqa: E402

drop_paid_keys()  # tests never reach a real API (a test that needs a key sets a dummy one for a local fake)
from tests.kinds import (pytest_addoption, pytest_collection_modifyitems, pytest_configure,  # noqa: E402,F401
                         pytest_make_collect_report, pytest_runtest_makereport, pytest_xdist_make_scheduler)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("RUBRICRL_DATA_DIR", str(d))
    return d

