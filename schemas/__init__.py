"""Contracts of every stage: pyarrow schemas, pydantic models of LLM outputs, GX suites.

Imports nothing of ours (see DESIGN.md: dependencies point one way).
"""
