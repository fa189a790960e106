"""The agent beside the Ray head: Ray state, exporter, victim protocol."""
