"""Passive quality evidence: what a response said, read off the request path. A stream's
facts read at its end (`collect.py`, `stream_template.py`, `response_assembly.py`), the
contract between response and signals (`observation.py`), the pure rules (`rules.py`,
`loops.py`, `scripts.py`, `schema_check.py`) and the recorder that feeds the book
(`passive.py`).

May import `gateway.quality.book`, `gateway.quality.config`, `gateway.process.tasks`,
`policies`' view types and `providers`.
"""
