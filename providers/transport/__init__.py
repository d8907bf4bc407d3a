"""The HTTP layer under every networked adapter: pooled sessions, deadlines and answer caps
(`http_transport.py`), a stream past its first bytes (`http_stream.py`), the lean
keep-alive HTTP/1.1 client for `http://` backends (`h1_client.py`, `h1_connection.py`,
`h1_response.py`), transport errors mapped into the provider error tree
(`upstream_errors.py`) and the one decoder of server-sent events (`sse.py`), which the
gateway's stream readers use too.

May import `providers.base`, `providers.errors`, `providers.rate_limits`; never an adapter.
"""
