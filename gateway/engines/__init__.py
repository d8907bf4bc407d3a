"""Real llama.cpp engines on this machine: the model file, xllamacpp, replica processes on
loopback, their state file, a gateway config for them, and `switchyard engines ...`.

Not on the request path: the CLI and tests start engines here; the gateway only reads the
config written for them. `running_replicas` is the API for tests and benchmarks.
"""
