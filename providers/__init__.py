"""Provider adapters: one per provider family, behind the `Provider` protocol.

A plugin framework: it owns its contract (`base`), settings and error tree and never
imports the gateway, which builds `ProviderSettings` and maps the errors to HTTP. Nothing
is imported here: `providers.registry` imports an adapter when a backend of its kind is
opened, so a gateway in front of vLLM never loads Anthropic's, Gemini's or the emulator's.
"""
