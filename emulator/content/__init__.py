"""What the emulated engine writes: words, JSON and tool calls from a seed
(`generation.py`, `text.py`), how long an answer runs (`answer_length.py`), needle answers
(`needle.py`), malformed tool calls (`tool_faults.py`), and the oracle's right answers
(`oracle.py`, reading stated field values with `stated_values.py` and short questions with
`short_answers.py`).

May import `emulator.request_parsing` and `emulator.settings` only.
"""
