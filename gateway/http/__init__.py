"""The HTTP edge: the server and its bounded protocol (client bounds), ASGI app, API
handlers, the proxy path, SSE relay, wire parsing, responses.

Owns everything that speaks HTTP to clients and maps the gateway's and providers' error
trees to OpenAI-shaped responses (and, for Anthropic's `/v1/messages`, to Anthropic's:
`anthropic_ingress`). May import the rest of `gateway` (it is the top of the request path),
`policies` and `providers`; nothing else in `gateway` imports it except `gateway.cli` and
`gateway.process.workers`, which start the app, and `gateway.routing.explain`, whose dry run
reads a request with the same wire parsing.
"""
