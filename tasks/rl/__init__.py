"""The RL step's environment side: the score step (rewards and token memberships), what a run's steps share,
checkpoints, run plots."""
