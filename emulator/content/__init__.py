"""What the emulated engine writes: words, JSON and tool calls from a seed
(`generation.py`, `text.py`), how long an answer runs (`answer_length.py`), needle answers
(`needle.py`) and malformed tool calls (`tool_faults.py`).

May import `emulator.request_parsing` and `emulator.settings` only.
"""
