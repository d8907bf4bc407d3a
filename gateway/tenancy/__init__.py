"""Tenancy: who a client is (static and virtual keys, the admin and metrics tokens) and
how much it may ask (RPM / TPM limits per key and per route, through Redis or in-process).

Keys are checked against an in-memory cache (`key_cache.py`) that a background task
refreshes from the store; limits are admitted by `limiter.py`. Nothing here waits on the
database on the request path; the limiter's one Redis round trip is bounded.
"""
