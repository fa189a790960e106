"""Where snapshots come from: PromQL (pure), Prometheus client, direct scrape."""
