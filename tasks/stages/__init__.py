"""The stage store: atomic Parquet parts and manifests, the stage runner with its great-expectations gate, and the DuckDB catalog."""
