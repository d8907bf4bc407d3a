"""The emulated engine's machinery: the KV cache and its prompt blocks (`kv_cache.py`,
`prompt_blocks.py`), continuous batching (`scheduler.py`), timing and pacing (`timing.py`,
`pacing.py`), the context window (`context_window.py`), counters (`metrics.py`) and one
instance's mutable state (`runtime_state.py`).

May import the emulator's shared top modules (`request_parsing`, `fault_injection`,
`provider_cache`, `rate_limits`, `settings`); never `emulator.wire` or `emulator.content`.
"""
