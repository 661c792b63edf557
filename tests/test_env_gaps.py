"""Which unserved library requests leave an app without a verdict (pure): those before its failure, each URL
once; none when it did not fail (it works despite them) or when the request came after (the checks' own pages)."""
from __future__ import annotations

from schemas.config.env import RuntimeConfig
from tasks.env.evidence import RuntimeEvidence
from tasks.env.probe_records import ProbeRecord
from tasks.env.records import BlockedRequest

CFG = RuntimeConfig()
LIB = "https://cdnjs.cloudflare.com/ajax/libs/p5.js/1.10.0/p5.js"


def req(url=LIB, outcome="environment_gap", phase="load", action=None):
    return BlockedRequest(url, "script", "request", outcome, "r", None, phase, action)


def test_a_load_failure_after_a_gap_has_no_verdict_each_url_once():
    ev = RuntimeEvidence(status="page_error", blank_body=False,
                         blocked_requests=[req(), req(), req(phase="check"), req("https://x.org/a.js", "refused")])
    assert [g.url for g in ev.environment_gaps(CFG)] == [LIB]
    assert ev.runtime_valid(CFG) is None


def test_no_failure_or_no_gap_keeps_the_verdict():
    assert RuntimeEvidence(status="ok", blank_body=False, blocked_requests=[req()]).runtime_valid(CFG) is True
    refused = RuntimeEvidence(status="page_error", blank_body=False, blocked_requests=[req(outcome="refused"),
                                                                                        req(outcome="not_found")])
    assert refused.environment_gaps(CFG) == [] and refused.runtime_valid(CFG) is False
    late = RuntimeEvidence(status="page_error", blank_body=False, blocked_requests=[req(phase="check")])
    assert late.runtime_valid(CFG) is False  # the checks' pages asked for it after the verdict


def test_an_interaction_failure_counts_the_gaps_before_its_action():
    actions = [{"i": i, "kind": "click", "target_desc": f"button#b{i}", "target_index": i, "tag": "button",
                "label": f"B{i}"} for i in range(4)]
    inter = ProbeRecord.from_dict({"status": "ok", "actions": actions,
                                   "errors": [{"action": 3, "sync": True, "kind": "error", "name": "TypeError",
                                               "message": "m", "offset": None, "caused": True}]})
    gate = RuntimeConfig(probe={"error_rule": "gate"})
    before = RuntimeEvidence(status="ok", blank_body=False, interaction=inter, blocked_requests=[req(phase="probe", action=2)])
    assert before.runtime_valid(gate) is None
    after = RuntimeEvidence(status="ok", blank_body=False, interaction=inter, blocked_requests=[req(phase="probe", action=5)])
    assert after.runtime_valid(gate) is False
