"""Relaying a committed upstream stream: its bookkeeping and the pulled relay
(`streaming.py`), the response that sends it (`response.py`), the splice onto uvicorn's
transport (`splice.py`, the one module that knows uvicorn's httptools protocol) and the
loop over OpenAI chunks that translating ingresses share (`translated.py`).

May import what `gateway.http` may.
"""
