"""Ray's GCS over plain gRPC: the agent's client of a Ray head, without the Ray library."""
