"""Live quality scores per backend and model: passive signals, active probes, the score."""
