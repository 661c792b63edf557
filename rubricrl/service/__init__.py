"""``rubricrl serve-env``: the environment as a reward service for other RL stacks.

- ``requests``: a request's bytes to validated items, or a 4xx naming the field and the limit;
- ``engine``: the scoring engine (``rubricrl score``'s code under the process-wide bounds);
- ``app``: the FastAPI routes (``/score``, ``/score/stream``, ``/openrlhf/get_reward``, ``/health``, ``/metrics``);
- ``metrics``: the Prometheus text of ``/metrics``; ``score_log``: the ``service_scores`` stage;
- ``server``: the bind and token rules and the uvicorn server (``serve_env``).

docs/service.md is the manual; docs/adapters.md the trainer-side settings for TRL, verl and OpenRLHF.
"""
