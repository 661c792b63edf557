"""The work of every stage as plain typed functions (no orchestrator, no trainer imported here)."""
