"""Synthetic traces in the replay format (../shared/workloads/FORMAT.md)."""
