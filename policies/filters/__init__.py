"""The built-in filters: each drops candidates a request must not reach, with a reason."""
