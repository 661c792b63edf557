"""Prompt templates live in files (``tasks/prompts/<name>.md``) with a version that enters cache keys.

File format: a first line ``version: N`` then a line ``---`` then the template. Placeholders are
``{{name}}`` (braces in JSON examples stay literal). A ``=== user ===`` line splits system text from
the user message. A ``=== per response ===`` line in the user message (standing for a blank line) ends
its shared head: what every call of a group repeats (the judge's query and rubric for a group's G
responses). The rendered text is the same with or without it; a provider with prompt caching caches up
to it (``tasks/llm/anthropic_provider.py``), so the group's other calls read the head at the cache price.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
SHARED_HEAD_END = "\n=== per response ===\n"


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: str
    system: str
    user: str
    shared_head: str = ""  # the user message's head shared by a group's calls ("" = none marked)

    @property
    def fingerprint(self) -> str:
        """Name, version and text: a template edited without a version bump still changes keys."""
        return hashlib.sha256(f"{self.name}\0{self.version}\0{self.system}\0{self.user}".encode()).hexdigest()[:16]

    def _sub(self, text: str, variables: dict[str, object]) -> str:
        def repl(m: re.Match[str]) -> str:
            key = m.group(1)
            if key not in variables:
                raise KeyError(f"prompt {self.name!r} needs variable {key!r}; pass it in LLMRequest.variables")
            return str(variables[key])

        return _PLACEHOLDER.sub(repl, text)

    def render(self, variables: dict[str, object]) -> tuple[str, str]:
        return self._sub(self.system, variables), self._sub(self.user, variables)

    def render_shared_head(self, variables: dict[str, object]) -> str:
        """The rendered user message up to its ``=== per response ===`` mark ("" when it has none): a prefix of
        the rendered user message."""
        return self._sub(self.shared_head, variables) if self.shared_head else ""


@lru_cache(maxsize=None)
def load_prompt(name: str, prompt_dir: Path = PROMPT_DIR) -> PromptTemplate:
    path = prompt_dir / f"{name}.md"
    if not path.exists():
        raise FileNotFoundError(f"prompt template {path} is missing; add it (first line 'version: N', then '---')")
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\n---\n")
    m = re.match(r"version:\s*(\S+)", head.strip())
    if not sep or not m:
        raise ValueError(f"{path}: first line must be 'version: N' followed by a '---' line")
    system, _, user = body.partition("\n=== user ===\n")
    head, mark, tail = user.strip().partition(SHARED_HEAD_END)
    if mark:  # the mark stands for the blank line between head and tail: the user text is as without it
        return PromptTemplate(name=name, version=m.group(1), system=system.strip(),
                              user=f"{head.rstrip()}\n\n{tail.lstrip()}", shared_head=head.rstrip())
    return PromptTemplate(name=name, version=m.group(1), system=system.strip(), user=user.strip())
