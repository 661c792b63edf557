import json

from tasks.ingest import ingest_jsonl


def test_malformed_lines_are_reported_with_line_numbers_and_good_lines_kept(tmp_path):
    f = tmp_path / "test.jsonl"
    lines = [
        json.dumps({"id": "000001", "instruction": "Please implement a todo list app.", "Category": "Content", "application_type": "Todo"}),
        "{this is not json",
        json.dumps({"id": "000003", "instruction": ""}),
        json.dumps({"id": "000004", "instruction": "Build a calculator web page."}),
        json.dumps({"id": "000001", "instruction": "Duplicate id here."}),
    ]
    f.write_text("\n".join(lines) + "\n")
    table, errors = ingest_jsonl(f)
    assert table.column("query_id").to_pylist() == ["ext-000001", "ext-000004"]
    assert table.column("source").to_pylist() == ["external:test.jsonl"] * 2
    assert [e.line for e in errors] == [2, 3, 5]
    assert "not valid JSON" in str(errors[0]) and "line 2" in str(errors[0])
