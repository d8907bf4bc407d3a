"""OpenAI's Responses API at the gateway's edge: `POST /v1/responses`, stateless.

Clients built on the Responses API (OpenAI's SDKs, agent frameworks, coding agents) use the
gateway as they would use OpenAI, with any backend behind it. One module per job:
`responses_request` (the request accepted; `unsupported` refuses what a stateless gateway
cannot do) and `request_translation` (to the OpenAI chat request the gateway routes,
`chat_request`); `response_object` (the answer's wire shapes), `response_translation` and
`stream_translation` (the backend's chat answer as a `response` and as the typed stream
events); `responses_dialect` (the proxy path's `Dialect` for `/v1/responses`). What the
Messages ingress translates alike is shared beside them: `gateway.http.chat_messages`,
`gateway.http.openai_reply` and `gateway.http.relay.translated`.

Deliberately no imports here: `gateway.http.proxy` imports the dialect.
"""
