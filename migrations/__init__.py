"""Alembic migrations of Switchyard's record store (run with `switchyard db upgrade`)."""
