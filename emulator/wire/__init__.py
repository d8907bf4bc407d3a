"""The emulator's front doors: OpenAI's, Anthropic's and Gemini's wire formats over the one
engine (`api_format.py` is the contract), their requests as pydantic models
(`openai_request.py`, `anthropic_request.py`, `gemini_request.py`) and the one way their
refusals name a field (`validation.py`), their response bodies (`openai_bodies.py`), SSE
events (`stream_events.py`), the chat form the non-OpenAI formats build (`chat_form.py`)
and Anthropic's cache order (`anthropic_cache.py`).

May import `emulator.content` and the emulator's shared top modules (`request_parsing`,
`provider_cache`, `rate_limits`, `settings`); never `emulator.engine`.
"""
