"""The store's database fixtures (a SQLite file, a throwaway PostgreSQL database)."""

from tests.gateway.store.conftest import db_url, postgres_url, sqlite_url

__all__ = ["db_url", "postgres_url", "sqlite_url"]
