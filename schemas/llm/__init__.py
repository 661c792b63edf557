"""What the LLM is asked to write, as the pydantic models its replies are validated against, and the JSON
schema a structured call sends (``json_schema``)."""
