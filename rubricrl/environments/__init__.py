"""What the project keeps of the environment for the RL stacks (docs/environments.md); the stacks' own code is the
standalone package environments/rubricrl_webapp, run in each stack's environment (``make envs``):

- ``rubricrl.environments.episode``: the published queries of a split and the policy's first turn (``rubricrl
  export-tasks``);
- ``rubricrl.environments.observation``: what the service found in an app, written for the policy (pure; the
  service's ``observe: true`` answers);
- ``rubricrl.environments.serve_openenv``: ``rubricrl serve-openenv``, the package's OpenEnv server run in
  ``.envs/openenv``.
"""
