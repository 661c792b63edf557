"""Free-text replies (teacher answers) through the same seam: no JSON parsing, one corrective retry."""
from pydantic import field_validator

from tasks.llm.base import LLMRequest, LLMResult, Provider, RawReply
from tasks.llm.replies import TextOutput
from tasks.llm.offline import OfflineProvider


class HtmlAnswer(TextOutput):
    @field_validator("text")
    @classmethod
    def _has_html(cls, v: str) -> str:
        if "<html" not in v:
            raise ValueError("no HTML document in the answer")
        return v


def _req(rule=None):
    return LLMRequest(stage="sft_answers", key="q1", prompt="generation", variables={"query": "Build a timer."},
                      output_model=HtmlAnswer, offline_rule=rule)


class Scripted(Provider):
    name, model = "scripted", "m"

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def _call(self, request, system, messages):
        self.seen.append(messages)
        return RawReply(self.replies.pop(0))


def test_offline_text_rule_returns_the_text_itself():
    res = OfflineProvider().complete(_req(lambda v: {"text": "```html\n<html><body>hi</body></html>\n```"}))
    assert res.ok and res.output.text.startswith("```html")


def test_text_reply_gets_one_corrective_retry_then_missing():
    p = Scripted(["sorry, no code", "<html><body>ok</body></html>"])
    res: LLMResult = p.complete(_req())
    assert res.ok and res.attempts == 2 and "no HTML document" in p.seen[1][-1]["content"]
    p = Scripted(["nothing", "still nothing"])
    res = p.complete(_req())
    assert not res.ok and "no HTML document" in res.error
