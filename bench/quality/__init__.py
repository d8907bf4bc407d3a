"""`switchyard bench quality` (also `python -m bench.quality`): how fast the quality scores
demote a faulty backend and how rarely a healthy one (docs/quality.md).

`cli.py` runs the scenarios and prints the table; `detection.py` is one scenario's harness
on a virtual clock; `fleet.py` is `--fleet`, several faulty backends behind the real gateway.
"""
