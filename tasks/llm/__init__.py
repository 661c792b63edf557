"""The LLM provider seam: one request/result contract, three providers (offline, anthropic, openai),
with a content-addressed cache, a cost ledger (``llm_calls``), retries, budgets and Message Batches."""
from tasks.llm.base import LLMRequest, LLMResult, Provider, Usage
from tasks.llm.prompts import PromptTemplate, load_prompt

__all__ = ["LLMRequest", "LLMResult", "Provider", "Usage", "PromptTemplate", "load_prompt", "get_provider"]


def get_provider(name: str | None = None, **kwargs) -> Provider:
    """Pick a provider by name (``auto``/``offline``/``anthropic``/``openai``; None = ``config.provider``).

    ``auto`` is ``anthropic`` when ANTHROPIC_API_KEY is set, else ``offline``. Keyword arguments go to
    ``tasks.llm.factory.make_provider`` (``model``, ``base_url``, ``config``, ``store``, ``run_id``).
    """
    from tasks.llm.factory import make_provider

    return make_provider(name, **kwargs)
