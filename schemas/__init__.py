"""The contracts every package reads; imports nothing of ours (see DESIGN.md: dependencies point one way).

- ``config/``: the configuration, one module per section on one base (``config.base.Section``), the root
  model and ``load_config`` in ``config/__init__.py``;
- ``contracts/``: the stage contracts, pyarrow schema and great-expectations suites per stage family;
- ``llm/``: what the LLM is asked to write (rubric construction, the judge's diagnosis) and the JSON schema
  sent with a structured call;
- ``rubric.py`` the rubric and the task, ``checks.py`` the check language, ``taxonomy.py`` the capability
  taxonomy, ``layout.py`` every name under the data directory.
"""
