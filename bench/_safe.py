"""Imported first by every bench: the repo's own code on ``sys.path`` (as in ``make bench``) and the API keys
removed from this process and its subprocesses (``tasks/llm/paid.py``): no paid call by accident.
``RUBRICRL_ALLOW_PAID_CALLS=1`` keeps them."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tasks.llm.paid import drop_paid_keys  # noqa: E402

DROPPED = drop_paid_keys()
