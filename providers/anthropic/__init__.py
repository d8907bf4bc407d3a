"""The `anthropic` kind: Anthropic's Messages API behind the OpenAI-shaped provider contract.

One module per job: `chat_request` (the OpenAI request accepted), `conversation` and
`request_translation` (to a Messages request), `messages_wire` (Anthropic's wire format),
`response_translation` and `stream_translation` (back to OpenAI's, via `chat_response`;
the stream's events read by `providers.transport.sse`), `error_mapping` (every failure
into the providers' error tree) and `provider` (the adapter: send, stream, health, close).

Imported when a backend of this kind is opened (`providers.registry`). May import the
rest of `providers`; never `gateway`.
"""
