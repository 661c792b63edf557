"""RL query selection (paper D.2): probe records and the selection by reward discrimination and weakness."""
