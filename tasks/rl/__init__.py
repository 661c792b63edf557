"""The RL step's environment side: the score step (rewards and token memberships), checkpoints, run plots."""
