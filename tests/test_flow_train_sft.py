"""train-sft end to end: chat export -> SFT job in a subprocess (DeepSpeed, tiny model, CPU) -> checkpoint
installed at checkpoints/sft/final_model, sft_steps stage with a falling loss, loss curve; re-run does
no work; bad inputs are clear errors (the export's rows as examples: tests/test_train_jobs.py)."""
import asyncio

import pytest

from flows.train_sft import train_sft
from tasks.rl.checkpoints import newest_policy
from tasks.stages.store import StageStore
from fakes.policy_data import build_references, write_export


def test_missing_export_names_generate_sft(prefect_harness, data_dir):
    with pytest.raises(ValueError, match="run generate-sft first"):
        train_sft(profile="demo")


def test_train_sft_flow_installs_checkpoint_and_loss_falls(prefect_harness, data_dir):
    from prefect.client.orchestration import get_client

    build_references(data_dir)
    write_export(data_dir, k=8)
    out = train_sft(profile="demo", sets=["train_sft.run.epochs=3", "train_sft.run.max_seq_len=768"])
    losses = out["losses"]
    assert len(losses) == 6 and losses[-1] < losses[0] - 0.5, losses  # 8 examples, 4 per step, 3 epochs
    ckpt = data_dir / "checkpoints" / "sft" / "final_model"
    assert (ckpt / "config.json").exists() and any(ckpt.glob("*.safetensors"))
    assert newest_policy(data_dir) == ckpt.resolve() or newest_policy(data_dir) == ckpt
    man = StageStore(data_dir).manifest("sft_steps")
    assert man.row_count > 0 and man.validation["success"]
    assert (data_dir / "reports" / "sft_loss.png").stat().st_size > 0

    async def latest():
        async with get_client() as c:
            return await c.read_latest_artifacts()

    art = [a for a in asyncio.run(latest()) if a.key == "train-sft-summary"][0].data
    assert "| sft_steps |" in art and "sft_loss.png" in art and "| 6 |" in art
    again = train_sft(profile="demo", sets=["train_sft.run.epochs=3", "train_sft.run.max_seq_len=768"])
    assert again["stages"][0]["skipped"] and again["losses"] == losses


def test_too_few_examples_is_the_jobs_clear_error(prefect_harness, data_dir):
    build_references(data_dir)
    write_export(data_dir, k=2)
    with pytest.raises(ValueError, match="examples_per_step"):
        train_sft(profile="demo")
