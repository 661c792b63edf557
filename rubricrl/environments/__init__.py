"""The environment as the standard RL stacks load it (docs/environments.md):

- ``rubricrl.environments.verifiers``: ``load_environment(...)``, a ``verifiers`` ``MultiTurnEnv``;
- ``rubricrl.environments.openenv``: the OpenEnv server (``rubricrl serve-openenv``), its client, and TRL's route;
- ``rubricrl.environments.episode``: what both run on (queries, scoring an app within its time limit, turns);
- ``rubricrl.environments.observation``: what the environment found, written for the policy (pure).
"""
