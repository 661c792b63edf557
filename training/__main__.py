"""``python -m training`` runs the GRPO job (see ``training/launch.py``)."""
from training.launch import main

raise SystemExit(main())
