"""Why a local engine could not be had or run; each message says what to do about it."""

from __future__ import annotations


class EngineError(Exception):
    """The root of this package's errors; the CLI prints the message and exits 2."""


class ModelUnavailable(EngineError):
    """No GGUF file: none given, none cached, and the download failed."""


class EngineUnavailable(EngineError):
    """`xllamacpp` (llama.cpp's server) is not importable and could not be installed."""


class ReplicaStartError(EngineError):
    """A replica exited or did not answer `/health` in time; the message names its log."""
