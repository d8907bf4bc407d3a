from __future__ import annotations

import pytest

from policies.filters.model_match_filter import ModelMatchFilter
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


@pytest.mark.parametrize(
    ("backend_models", "keep", "reason"),
    [
        ({"local": {"qwen-q4"}, "cloud": {"Qwen/Qwen2.5-7B"}}, [True, True], None),
        (
            {"local": {"qwen-q4"}, "cloud": {"qwen-q4"}},
            [True, False],
            "does not serve Qwen/Qwen2.5-7B",
        ),
    ],
    ids=["each-serves-its-own", "cloud-lacks-its-own"],
)
def test_each_member_is_checked_for_its_own_model(
    backend_models: dict[str, set[str]], keep: list[bool], reason: str | None
) -> None:
    policy = ModelMatchFilter("mm", ModelMatchFilter.Params())
    fleet = [backend(name, models=models) for name, models in backend_models.items()]
    snap = snapshot(fleet, model="qwen-q4", member_models={"cloud": "Qwen/Qwen2.5-7B"})
    answer = policy.filter(snap, fleet)
    assert [answer[b.name].keep for b in fleet] == keep
    assert answer["local"].reason == "serves qwen-q4"
    if reason is not None:
        assert answer["cloud"].reason == reason
