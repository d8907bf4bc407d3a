"""The built-in pickers: each chooses one candidate from the weighted totals."""
