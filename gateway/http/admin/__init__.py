"""The admin API: virtual keys (`keys.py`) and the config reload (`reload.py`).

May import what `gateway.http` may.
"""
