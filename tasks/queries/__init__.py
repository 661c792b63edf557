"""Queries: synthesis from categories x personas (paper D.1), near-dedup, coverage, and ingest of external sets."""
