"""The controller's pure core: a RayCluster's opt-in, the objects it should have, the changes."""
