"""The base of every config section: unknown keys are errors (with the key likely meant),
values are frozen."""

from __future__ import annotations

from policies.strict_model import StrictModel


class StrictConfig(StrictModel):
    """Every config section: unknown keys are errors, each suggesting the closest field
    name (`did you mean `model`?`), values are frozen (`policies.strict_model`)."""
