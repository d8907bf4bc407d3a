"""Answer checks: a plugin family of pure functions of (request, answer, params), each
returning None when the answer passes or the reason it fails (`registry.py`: the
contract and lookup; `builtin.py`: the built-ins)."""
