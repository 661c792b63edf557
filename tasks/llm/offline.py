"""The embedded default: a deterministic provider that builds each output from the request's
variables by the caller's rule (``LLMRequest.offline_rule``). No network, no key.

Every row it produces carries provider ``offline`` so nobody mistakes it for a model's work.
"""
from __future__ import annotations

import json

from schemas.config.llm import OFFLINE_MODEL
from tasks.llm.base import LLMRequest, Provider, RawReply, Usage
from tasks.llm.replies import is_text_output



class OfflineProvider(Provider):
    name = "offline"
    model = OFFLINE_MODEL

    def _call(self, request: LLMRequest, system: str, messages: list[dict[str, str]]) -> RawReply:
        if request.offline_rule is None:
            raise ValueError(
                f"stage {request.stage!r} (prompt {request.prompt!r}) has no offline rule; "
                "set ANTHROPIC_API_KEY or choose provider 'anthropic'/'openai' in the config"
            )
        out = request.offline_rule(dict(request.variables))
        text = out["text"] if is_text_output(request.output_model) else json.dumps(out)
        # Token counts are estimated (~4 characters a token) so ledgers and dry runs have a scale.
        prompt_chars = len(system) + sum(len(m["content"]) for m in messages)
        return RawReply(text, Usage(input_tokens=prompt_chars // 4, output_tokens=len(text) // 4))
