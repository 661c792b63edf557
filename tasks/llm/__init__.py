"""The LLM provider seam: one request/result contract, three providers (offline, anthropic, openai)."""
from tasks.llm.base import LLMRequest, LLMResult, Provider, Usage
from tasks.llm.prompts import PromptTemplate, load_prompt

__all__ = ["LLMRequest", "LLMResult", "Provider", "Usage", "PromptTemplate", "load_prompt", "get_provider"]


def get_provider(name: str = "auto", **kwargs) -> Provider:
    """Pick a provider by name; ``auto`` is ``anthropic`` when ANTHROPIC_API_KEY is set, else ``offline``."""
    from tasks.llm.factory import make_provider

    return make_provider(name, **kwargs)
