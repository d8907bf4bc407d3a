"""The record store: request records, quality events and scores, probe results in SQL.

`writer.StoreWriter` takes rows from the gateway without blocking and writes them in
batches; `migrate` keeps the schema current; `config.resolve_url` says whether the store
is on at all (without importing SQLAlchemy: the rest of this package is loaded only when
it is). May import `gateway.config` and `gateway.errors`.
"""
