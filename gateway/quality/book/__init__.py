"""The quality book and its verdicts: evidence per backend and model (`quality_book.py`,
`pair.py`), decayed scores (`score.py`, `pair_scores.py`), signals judged against peers
(`peers.py`), suspects' sequential trials (`suspicion.py`, `trial_judge.py`) and the
evidence kept with each state change (`audit.py`).

May import `gateway.quality.config`, `gateway.quality.signals.observation` (the evidence's
contract), `gateway.quality.explain` (signals in words), `gateway.fleet.backoff` and
`policies`' view types.
"""
