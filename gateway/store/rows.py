"""Rows shaped for one batch insert: grouped by table, each table's rows with the same keys,
strings cut to their column's length."""

from __future__ import annotations

from typing import Any

from sqlalchemy import DefaultClause, String

from gateway.store.models import TABLES

Row = dict[str, Any]


def group_rows(batch: list[tuple[str, Row]]) -> dict[str, list[Row]]:
    """Rows by table, each table's rows with the same keys (one executemany needs that).

    A key some rows lack gets the column's server default there (`replica`: ''), else None.
    """
    groups: dict[str, list[Row]] = {}
    for table, row in batch:
        groups.setdefault(table, []).append(fit_row(row, _LENGTHS[table]))
    for table, rows in groups.items():
        keys = set(rows[0])
        if any(set(row) != keys for row in rows):
            keys = set().union(*rows)
            missing = _DEFAULTS[table]
            groups[table] = [
                {key: row[key] if key in row else missing.get(key) for key in keys} for row in rows
            ]
    return groups


def fit_row(row: Row, lengths: dict[str, int]) -> Row:
    """The row with strings cut to their column's length.

    PostgreSQL refuses a longer value (SQLite does not), and with it the whole batch.
    """
    for column, length in lengths.items():
        value = row.get(column)
        if isinstance(value, str) and len(value) > length:
            row = row | {column: value[:length]}
    return row


_LENGTHS: dict[str, dict[str, int]] = {
    name: {
        column.name: column.type.length
        for column in table.columns
        if isinstance(column.type, String) and column.type.length
    }
    for name, table in TABLES.items()
}

_DEFAULTS: dict[str, dict[str, str]] = {
    name: {
        column.name: column.server_default.arg
        for column in table.columns
        if isinstance(column.server_default, DefaultClause)
        and isinstance(column.server_default.arg, str)
    }
    for name, table in TABLES.items()
}
