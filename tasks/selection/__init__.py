"""RL query selection (paper D.2): probe candidates and the selection by reward discrimination and weakness."""
