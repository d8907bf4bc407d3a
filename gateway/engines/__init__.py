"""Real llama.cpp engines on this machine: the model file, xllamacpp, replica processes on
loopback, their state file, a gateway config for them, and `switchyard engines ...`.

Not on the request path: the CLI and tests start engines here; the gateway only reads the
config written for them. `running_replicas` is the API for tests and benchmarks.
"""

from gateway.engines.errors import (
    EngineError,
    EngineUnavailable,
    ModelUnavailable,
    ReplicaStartError,
)
from gateway.engines.launcher import ReplicaOptions, running_replicas, start_replicas
from gateway.engines.model_file import ensure_model
from gateway.engines.state import Replica

__all__ = [
    "EngineError",
    "EngineUnavailable",
    "ModelUnavailable",
    "Replica",
    "ReplicaOptions",
    "ReplicaStartError",
    "ensure_model",
    "running_replicas",
    "start_replicas",
]
