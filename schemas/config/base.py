"""The base of every configuration section: an unknown key is an error (a misspelt setting never passes
silently), and an assignment is validated like the construction."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
