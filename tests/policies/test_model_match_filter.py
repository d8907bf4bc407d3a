from __future__ import annotations

import pytest

from policies.model_match_filter import ModelMatchFilter
from tests.policies.builders import backend, snapshot


@pytest.mark.parametrize(
    ("models", "requested", "keep", "reason"),
    [
        ({"llama-3.1-8b"}, "llama-3.1-8b", True, "serves llama-3.1-8b"),
        ({"llama-3.1-8b", "qwen"}, "qwen", True, "serves qwen"),
        ({"llama-3.1-8b"}, "qwen", False, "does not serve qwen"),
        (set(), "qwen", False, "does not serve qwen"),
    ],
)
def test_model_match(models: set[str], requested: str, keep: bool, reason: str) -> None:
    policy = ModelMatchFilter("mm", ModelMatchFilter.Params())
    b = backend("a", models=models)
    verdict = policy.filter(snapshot([b], model=requested), [b])["a"]
    assert (verdict.keep, verdict.reason) == (keep, reason)
