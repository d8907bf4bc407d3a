"""The `gemini` kind: Google's Gemini API natively, translated to and from OpenAI's wire.

One module per job: `request` (OpenAI chat → `generateContent`), `generation` (sampling,
reasoning and tool-choice options), `response` (an answer → `chat.completion`), `stream`
(SSE events → `chat.completion.chunk`s), `errors` (the one error mapping), `provider`
(send, stream, health, close).

Imported when a backend of this kind is opened (`providers.registry`). May import the
rest of `providers`; never `gateway`.
"""
