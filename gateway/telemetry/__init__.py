"""What the gateway tells operators: request records, Prometheus metrics, dashboard series."""
