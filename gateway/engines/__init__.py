"""Real llama.cpp engines on this machine: the model file, xllamacpp, replica processes on
loopback, their state file, a gateway config for them, and `switchyard engines ...`.

Not on the request path: the CLI and tests start engines here; the gateway only reads the
config written for them. `running_replicas` (in `launcher.py`) is the API for tests and
benchmarks. May import `gateway.config` and `gateway.errors` only; only `gateway.cli`
imports it.
"""
