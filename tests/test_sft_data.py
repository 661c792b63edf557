"""generate-sft: gates decide rejection with real evidence (tree-sitter, headless Chromium); the export is
chat-format Parquet that `datasets` reads as is."""
import pytest

from schemas.config.env import EnvConfig
from schemas.config.llm import OFFLINE_MODEL
from schemas.rubric import CompactItem, CompactRubric, Task
from tasks.llm.base import Provider, RawReply
from tasks.llm.offline import OfflineProvider
from tasks.sft.data import answer_chunk, export_chat, rejection_rates


class ScriptedTeacher(Provider):
    name, model = "scripted", "teacher-x"

    def __init__(self, by_query):
        self.by_query = by_query

    def _call(self, request, system, messages):
        return RawReply(self.by_query[request.key.split(":")[0]])


def _task(qid):
    return Task(query_id=qid, query=f"Build a counter app number {qid} with a reset button.",
                rubric=CompactRubric(initial_state=[CompactItem(id="I1", requirement="Shows a counter at 0", level="core_module")],
                                     dynamic=[CompactItem(id="D1", requirement="Clicking + increments the counter", level="correct_rule")]))


THROWS = "```html\n<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>\n```"
BAD_JS = "```html\n<!DOCTYPE html><html><body><p>x</p><script>function ( {</script></body></html>\n```"
GOOD = "```html\n<!DOCTYPE html><html><body><button id=b>+</button><span id=c>0</span><script>let n=0;document.getElementById('b').onclick=()=>{n++;document.getElementById('c').textContent=n;};</script></body></html>\n```"


@pytest.mark.timeout(300)
def test_gates_mark_rejections_and_export_keeps_only_accepted(tmp_path):
    tasks = [_task(q) for q in ("qa", "qb", "qc", "qd")]
    teacher = ScriptedTeacher({"qa": GOOD, "qb": THROWS, "qc": BAD_JS, "qd": "Sorry, I cannot help with that."})
    meta = {"qa": {"difficulty": "easy", "domain": "Tools", "category_ids": ["interaction"]}}
    table = answer_chunk(tasks, meta, {"teacher-x": teacher}, env=EnvConfig(), judge=None, max_tokens=512,
                         temperature=0.0, concurrency=2)
    rows = {r["query_id"]: r for r in table.to_pylist()}
    assert rows["qa"]["rejected"] is False and rows["qa"]["runtime_valid"] is True
    assert rows["qb"]["reject_reason"] == "runtime_invalid"
    assert rows["qc"]["reject_reason"] == "source_invalid"
    assert rows["qd"]["reject_reason"] == "format_invalid"
    assert [m["role"] for m in rows["qa"]["messages"]] == ["system", "user", "assistant"]
    rates = rejection_rates(table)
    assert rates["teacher"]["teacher-x"] == (3, 4)
    assert rates["difficulty"]["easy"] == (0, 1)

    path = export_chat(table, tmp_path / "sft.parquet")
    import datasets

    ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert ds.num_rows == 1
    assert ds[0]["messages"][2]["role"] == "assistant" and "<button id=b>" in ds[0]["messages"][2]["content"]
    assert ds[0]["query_id"] == "qa" and ds[0]["teacher"] == "teacher-x" and ds[0]["prompt_version"] == "1"


def test_offline_teacher_answers_pass_every_gate_and_say_offline():
    tasks = [_task("q1"), _task("q2")]
    table = answer_chunk(tasks, {}, {OFFLINE_MODEL: OfflineProvider()}, env=EnvConfig(), judge=None,
                         max_tokens=512, temperature=0.0, concurrency=1)
    rows = table.to_pylist()
    assert all(r["provider"] == "offline" for r in rows)
    assert all(r["format_valid"] and r["source_valid"] and r["runtime_valid"] and not r["rejected"] for r in rows)
