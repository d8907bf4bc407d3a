"""Anthropic's Messages API at the gateway's edge: `/v1/messages` and its `count_tokens`.

Clients built on Anthropic's SDKs (coding agents) use the gateway as they would use
Anthropic. One module per job: `messages_request` (the request accepted) and
`request_translation` (to the OpenAI request the gateway routes, `openai_request`);
`response_translation` and `stream_translation` (the backend's answer as Anthropic's
`message` and stream events, `messages_reply`); `native_reply` (the client's own request
for a backend of Anthropic's API, and its answer back as it came); `errors` (the
gateway's error tree in Anthropic's shape); `messages_dialect` (the proxy path's
`Dialect` for `/v1/messages`) and `count_tokens`. What the Responses ingress translates
alike lives in `gateway.http`: `chat_messages` (the chat messages and tools sent),
`openai_reply` (the backend's answer read) and `relay.translated` (the stream's chunk loop
and its ending after a failure).

Deliberately no imports here: `gateway.http.proxy` imports the dialect, and
`count_tokens` imports the proxy's body reader.
"""
