"""The record store: request records, quality events and scores, probe results in SQL.

`StoreWriter` takes rows from the gateway without blocking and writes them in batches;
`migrate` keeps the schema current; `resolve_url` says whether the store is on at all.
"""
