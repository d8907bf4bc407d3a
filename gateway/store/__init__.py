"""The record store: request records, quality events and scores, probe results in SQL.

`StoreWriter` takes rows from the gateway without blocking and writes them in batches;
`migrate` keeps the schema current; `resolve_url` says whether the store is on at all.
"""

from gateway.store.database import DATABASE_URL_ENV, make_engine, redact_url, resolve_url
from gateway.store.migrate import current, downgrade, head, upgrade
from gateway.store.models import TABLES, TableName, metadata
from gateway.store.writer import StoreWriter

__all__ = [
    "DATABASE_URL_ENV",
    "TABLES",
    "StoreWriter",
    "TableName",
    "current",
    "downgrade",
    "head",
    "make_engine",
    "metadata",
    "redact_url",
    "resolve_url",
    "upgrade",
]
