"""Anthropic's Messages API at the gateway's edge: `/v1/messages` and its `count_tokens`.

Clients built on Anthropic's SDKs (coding agents) use the gateway as they would use
Anthropic. One module per job: `messages_request` (the request accepted) and
`request_translation` (to the OpenAI request the gateway routes, `openai_request`);
`openai_reply` (the backend's answer read), `response_translation` and
`stream_translation` (to Anthropic's `message` and stream events, `messages_reply`);
`errors` (the gateway's error tree in Anthropic's shape); `messages_dialect` (the
proxy path's `Dialect` for `/v1/messages`) and `count_tokens`.

Deliberately no imports here: `gateway.http.proxy` imports the dialect, and
`count_tokens` imports the proxy's body reader.
"""
