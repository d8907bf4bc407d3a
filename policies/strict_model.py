"""The base of every YAML model, the policy framework's and the host's (`gateway.config.
strict`): unknown keys are errors that suggest the key meant, values are frozen."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

SUGGESTION_CUTOFF = 0.6
"""difflib's similarity below which no key is suggested (`modle` → `model`, `prot` →
`port`; `colour` suggests nothing)."""


def did_you_mean(key: str, known: Collection[str]) -> str:
    """`; did you mean `model`?` for the known key closest to `key`; empty when none is
    close enough."""
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=SUGGESTION_CUTOFF)
    return f"; did you mean `{close[0]}`?" if close else ""


class StrictModel(BaseModel):
    """Unknown keys are errors, each with the closest field name when one is close; values
    are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="wrap")
    @classmethod
    def _suggest_known_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            return handler(data)
        except ValidationError as exc:
            suggested = _with_suggestions(exc, cls.model_fields.keys())
            if suggested is None:
                raise
            raise suggested from None


def _with_suggestions(exc: ValidationError, known: Collection[str]) -> ValidationError | None:
    """`exc` with a suggestion on each unknown key of this model (not of the models inside
    it: those have suggested their own); None when there is none to make."""
    lines: list[InitErrorDetails] = []
    suggested = False
    for err in exc.errors():
        hint = ""
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            hint = did_you_mean(str(err["loc"][0]), known)
            suggested = suggested or bool(hint)
        # Rebuilt with the message as it reads: the type and path stay, the context goes.
        error = PydanticCustomError(err["type"], err["msg"] + hint)
        lines.append({"type": error, "loc": err["loc"], "input": err["input"]})
    return ValidationError.from_exception_data(exc.title, lines) if suggested else None
