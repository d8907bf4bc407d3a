"""The fault suite (issue 16, item 6): a real gateway on loopback in front of emulated
engines that misbehave, one test per scenario. Each test checks what the client saw, how
many requests each engine received, the request's record (telemetry) and the backends'
health afterwards.

Scenarios and what is expected (docs/reliability.md#fault-suite has the table):

- before the first byte (`test_before_first_byte.py`): a stall, a 5xx, a 429 with
  Retry-After, a 200 whose body is not JSON, a flapping engine. The attempt fails, the
  next candidate serves, the client sees one clean answer; the failed attempt is in the
  decision with its outcome, counts against its backend's health (a 429 cools it down
  instead) and is never billed: the record's usage and cost are the serving attempt's.
- after the first byte (`test_after_first_byte.py`): a stall mid-stream, a stream cut
  after N chunks, a stream that ends without `[DONE]`. No retry (the other engine sees
  no request); the client's stream ends with an explicit error event in its own API's
  shape (OpenAI chat, Anthropic's `event: error`, Responses' `error` then
  `response.failed`), never a clean-looking end; the record says what broke it. A stream
  cut before its first chunk is retried; one ended by the request's own deadline is not
  the backend's failure. `test_backend_kinds.py` breaks the streams of each backend kind
  the gateway translates (OpenAI-format, Anthropic, Gemini) the same ways.
- a route whose every backend is cooling down (`test_cooling_route.py`): the request
  waits for the soonest cool-down when it ends within the request's deadline and
  `retry.max_retry_after_s`, else moves to the route's fallback route, else gets a 429
  with `Retry-After`; no engine is sent a request while it is cooling down.

Run: `.venv/bin/python -m pytest tests/faults` (about a second per test).
"""
