"""The built-in scorers: each rates every candidate in [0, 1], with a reason."""
