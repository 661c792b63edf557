"""Prompt templates live in files (``tasks/prompts/<name>.md``) with a version that enters cache keys.

File format: a first line ``version: N`` then a line ``---`` then the template. Placeholders are
``{{name}}`` (braces in JSON examples stay literal). A ``=== user ===`` line splits system text from
the user message.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: str
    system: str
    user: str

    @property
    def fingerprint(self) -> str:
        """Name, version and text: a template edited without a version bump still changes keys."""
        return hashlib.sha256(f"{self.name}\0{self.version}\0{self.system}\0{self.user}".encode()).hexdigest()[:16]

    def render(self, variables: dict[str, object]) -> tuple[str, str]:
        def sub(text: str) -> str:
            def repl(m: re.Match[str]) -> str:
                key = m.group(1)
                if key not in variables:
                    raise KeyError(f"prompt {self.name!r} needs variable {key!r}; pass it in LLMRequest.variables")
                return str(variables[key])

            return _PLACEHOLDER.sub(repl, text)

        return sub(self.system), sub(self.user)


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
    return PromptTemplate(name=name, version=m.group(1), system=system.strip(), user=user.strip())
