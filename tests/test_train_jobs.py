"""The one launcher of training jobs (``training/jobs.py``) on a fake job module, and the SFT job's side of the
pipeline (``tasks/sft/job.py``): its examples from the chat export and its step records (pure, or a tiny
subprocess that only prints)."""
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.contracts.training import SFT_STEPS_SCHEMA
from schemas.layout import RUN_RECORDS
from tasks.sft.job import chat_to_examples, losses, read_steps
from training.jobs import GRPO_JOB, SFT_JOB, job_command, run_job

# a job that does what its --config file says: refuse it (exit 2 after "error:"), crash, exit 2 silently, or finish
FAKE_JOB = '''import sys
what = open(sys.argv[sys.argv.index("--config") + 1]).read().strip()
print("job started", flush=True)
if what == "refuse":
    print("error: train_sft.run.epochs must be positive", file=sys.stderr)
    sys.exit(2)
if what == "crash":
    raise SystemExit("boom: out of memory")
sys.exit(2 if what == "silent2" else 0)
'''


@pytest.fixture
def job(tmp_path):
    (tmp_path / "fake_job.py").write_text(FAKE_JOB)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(what, log, append=False):
        (tmp_path / "config.json").write_text(what)
        return run_job("fake_job", tmp_path / "config.json", log, env=env, append=append)
    return run


def test_commands_of_one_and_several_processes(tmp_path):
    assert job_command(SFT_JOB, tmp_path / "c.json") == [sys.executable, "-m", "training.sft", "--config",
                                                         str(tmp_path / "c.json")]
    assert job_command(GRPO_JOB, tmp_path / "c.json", nproc=2)[1:6] == \
        ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m"]


def test_a_refused_configuration_is_its_error_line_and_a_crash_is_the_logs_tail(job, tmp_path):
    log = tmp_path / "job.log"
    assert job("finish", log) == log and log.read_text() == "job started\n"
    with pytest.raises(ValueError, match=r"^error: train_sft.run.epochs must be positive \(fake_job job log: "):
        job("refuse", log)
    with pytest.raises(RuntimeError, match=r"(?s)exited with code 1; last lines of .*job started\nboom: out of memory"):
        job("crash", log)
    assert "error:" not in log.read_text()  # a fresh log per run unless appended to


def test_an_appended_log_is_read_from_where_this_run_began(job, tmp_path):
    log = tmp_path / "job.log"
    with pytest.raises(ValueError):
        job("refuse", log)
    with pytest.raises(RuntimeError, match="exited with code 2"):  # the earlier run's error line is not this run's
        job("silent2", log, append=True)
    assert log.read_text().count("job started") == 2


def test_chat_rows_become_query_answer_examples():
    rows = [{"query_id": "q1", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
                                            {"role": "assistant", "content": "A"}]}]
    assert chat_to_examples(rows) == [{"query_id": "q1", "query": "Q", "answer": "A"}]
    with pytest.raises(ValueError, match="re-run generate-sft"):
        chat_to_examples([{"answer_id": "q2:t", "messages": [{"role": "user", "content": "Q"}]}])


def test_step_records_are_read_in_order_and_their_absence_is_named(tmp_path):
    with pytest.raises(RuntimeError, match="wrote no step records"):
        read_steps(tmp_path)
    steps = tmp_path / RUN_RECORDS / "train_steps"
    steps.mkdir(parents=True)
    for step, loss in ((1, 2.0), (0, 3.0)):
        rows = [{"step": step, "metric": "loss/sft", "value": loss}, {"step": step, "metric": "lr", "value": 0.1}]
        pq.write_table(pa.Table.from_pylist(rows, schema=SFT_STEPS_SCHEMA), steps / f"step-{step:06d}.parquet")
    assert losses(read_steps(tmp_path).to_pylist()) == [(0, 3.0), (1, 2.0)]
