"""One-off measurements: scripts that answered one question once, kept because a doc quotes
their figure and tells how to reproduce it (`python -m bench.studies.NAME`).

No `switchyard bench` command runs them and no benchmark imports them; they may rot as the
code moves on. A measurement that is rerun to check a target belongs with its command
(`bench/cpu/`, `bench/quality/`, ...), not here.
"""
