"""Cascade workloads: the same requests per seed, of the asked shapes; graders that accept
the emulator oracle's answers to every one and reject wrong answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson
import pytest

from bench.workloads.cascade import extraction, short_questions
from bench.workloads.cascade.grading import Answer, answer_of
from bench.workloads.cascade.records import HARD_KIND, KINDS, CascadeRequest, Kind, grade
from bench.workloads.cascade.workload import main, mixed, read, requests, write
from tests.conftest import StartEmulator

ALL_KINDS: tuple[Kind, ...] = (*KINDS, HARD_KIND)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_seed_gives_the_same_requests_and_another_seed_others(kind: Kind) -> None:
    first = requests(kind, 7, 12)
    assert first == requests(kind, 7, 12)
    assert first[:5] == requests(kind, 7, 5)  # a shorter workload is the longer one's start
    assert [r.body for r in first] != [r.body for r in requests(kind, 8, 12)]
    assert len({r.id for r in first}) == 12
    assert {r.kind for r in first} == {kind}


def test_a_mix_is_seeded_and_draws_every_kind_asked() -> None:
    mix = mixed(3, 60, kinds=ALL_KINDS)
    assert mix == mixed(3, 60, kinds=ALL_KINDS)
    assert {r.kind for r in mix} == set(ALL_KINDS)
    assert {r.kind for r in mixed(3, 60)} == set(KINDS)
    only_short = mixed(3, 20, kinds=("short", "tools"), weights=(1, 0))
    assert {r.kind for r in only_short} == {"short"}
    with pytest.raises(ValueError, match="weights"):
        mixed(3, 5, kinds=("short",), weights=(1, 2))


def _schema(record: CascadeRequest) -> dict[str, Any]:
    schema: dict[str, Any] = record.body["response_format"]["json_schema"]["schema"]
    return schema


@pytest.mark.parametrize("kind", ["extraction", "nested-extraction"])
def test_extraction_asks_for_what_its_truth_holds(kind: Kind) -> None:
    for record in requests(kind, 1, 40):
        schema = _schema(record)
        jsonschema.validate(record.truth, schema)
        assert record.body["response_format"]["json_schema"]["strict"] is True
        assert schema["required"] == list(schema["properties"])
        if kind == "extraction":
            assert extraction.FIELDS[0] <= len(schema["properties"]) <= extraction.FIELDS[1]
            types = {field.get("type") for field in schema["properties"].values()}
            assert types <= {"string", "integer", "boolean"}
    nested = requests("nested-extraction", 1, 1)[0]
    leaves = [
        leaf for part in _schema(nested)["properties"].values() for leaf in part["properties"]
    ]
    assert len(leaves) == 6


def test_tool_requests_offer_one_to_three_tools_and_name_the_one_wanted() -> None:
    for record in requests("tools", 2, 40):
        assert isinstance(record.truth, dict)
        offered = {tool["function"]["name"]: tool["function"] for tool in record.body["tools"]}
        assert 1 <= len(offered) <= 3
        wanted = offered[record.truth["name"]]
        jsonschema.validate(record.truth["arguments"], wanted["parameters"])
        asked = record.body["messages"][-1]["content"]
        assert [name for name in offered if name in asked] == [record.truth["name"]]


def test_short_questions_are_arithmetic_or_a_look_up_among_5_to_20_facts() -> None:
    records = requests("short", 3, 60)
    assert {r.task for r in records} == {"arithmetic", "lookup"}
    for record in records:
        asked = record.body["messages"][-1]["content"]
        if record.task == "arithmetic":
            operands = re.findall(r"\d+", asked.split("?")[0])
            assert all(2 <= len(operand) <= 3 for operand in operands)
            assert asked.endswith("Answer with the number only.")
        else:
            facts = asked.count("The code for ")
            assert short_questions.FACTS[0] <= facts <= short_questions.FACTS[1]
            assert f" is {record.truth}." in asked


async def _answers(base_url: str, records: list[CascadeRequest]) -> list[Answer]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        responses = [await http.post("/chat/completions", json=r.body) for r in records]
    assert all(response.status_code == 200 for response in responses), responses[0].text
    return [answer_of(response.json()) for response in responses]


async def test_the_oracle_answers_every_request_right(start_emulator: StartEmulator) -> None:
    oracle = await start_emulator(models=["cascade"], answers="oracle", ignore_eos=False)
    records = [r for kind in ALL_KINDS for r in requests(kind, 11, 40)] + mixed(12, 40)
    answers = await _answers(oracle.base_url, records)
    wrong = [r.id for r, answer in zip(records, answers, strict=True) if not grade(r, answer)]
    assert wrong == []
    for record, answer in zip(records, answers, strict=True):
        if "response_format" in record.body:
            assert isinstance(answer, str)
            jsonschema.validate(orjson.loads(answer), _schema(record))


async def test_the_filler_engine_is_graded_wrong(start_emulator: StartEmulator) -> None:
    filler = await start_emulator(models=["cascade"], ignore_eos=False)
    records = [r for kind in ALL_KINDS for r in requests(kind, 11, 20)]
    answers = await _answers(filler.base_url, records)
    assert not any(grade(r, a) for r, a in zip(records, answers, strict=True))


ORDER = CascadeRequest(
    "x",
    "extraction",
    "order",
    {},
    {"order_number": 12, "customer_name": "Ana Lima", "gift_wrapped": True, "status": "shipped"},
)
RIGHT_ORDER = '{"order_number": 12, "customer_name": "Ana Lima", "gift_wrapped": true, '
NESTED = CascadeRequest(
    "n", "nested-extraction", "shipment", {}, {"customer": {"name": "Bo", "tier": "gold"}}
)
CALL = CascadeRequest(
    "t",
    "tools",
    "convert_currency",
    {},
    {"name": "convert_currency", "arguments": {"amount": 12.5, "from_currency": "USD"}},
)
SUM = CascadeRequest("s", "short", "arithmetic", {}, "-1776")
CODE = CascadeRequest("c", "short", "lookup", {}, "QX-4821")


def _call(name: str, arguments: object) -> list[dict[str, Any]]:
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return [{"id": "1", "type": "function", "function": {"name": name, "arguments": text}}]


@pytest.mark.parametrize(
    ("record", "answer", "right"),
    [
        (ORDER, RIGHT_ORDER + '"status": "shipped"}', True),
        (ORDER, RIGHT_ORDER + '"status": " Shipped ", "extra": 1}', True),
        (ORDER, f"```json\n{RIGHT_ORDER}" + '"status": "shipped"}\n```', True),
        (ORDER, RIGHT_ORDER + '"status": "pending"}', False),
        (ORDER, RIGHT_ORDER + "}", False),
        (ORDER, RIGHT_ORDER.replace("true", '"yes"') + '"status": "shipped"}', False),
        (ORDER, RIGHT_ORDER.replace("12", '"12"') + '"status": "shipped"}', False),
        (ORDER, RIGHT_ORDER, False),
        (ORDER, "[1, 2]", False),
        (ORDER, _call("order", {}), False),
        (NESTED, '{"customer": {"name": "bo", "tier": "GOLD", "email": "x"}}', True),
        (NESTED, '{"customer": {"name": "Bo"}, "tier": "gold"}', False),
        (NESTED, '{"customer": "Bo gold"}', False),
        (CALL, _call("convert_currency", {"amount": 12.50, "from_currency": "usd"}), True),
        (CALL, _call("convert_currency", {"amount": 12.5, "from_currency": "USD", "x": 1}), True),
        (CALL, _call("convert_currency", {"amount": 12, "from_currency": "USD"}), False),
        (CALL, _call("convert_currency", {"amount": "12.5", "from_currency": "USD"}), False),
        (CALL, _call("convert_currency", {"from_currency": "USD"}), False),
        (CALL, _call("get_weather", {"amount": 12.5, "from_currency": "USD"}), False),
        (CALL, _call("convert_currency", '{"amount": 12.5, '), False),
        (CALL, '{"amount": 12.5, "from_currency": "USD"}', False),
        (CALL, [], False),
        (SUM, "-1776", True),
        (SUM, "The answer is -1,776.", True),
        (SUM, "-1776 or maybe 12", True),
        (SUM, "1776", False),
        (SUM, "12 then -1776", False),
        (SUM, "I cannot say.", False),
        (CODE, "qx-4821", True),
        (CODE, "The code is QX-4821.", True),
        (CODE, "QX-4812", False),
        (CODE, "AB-0012, not QX-4821", False),
        (CODE, "QX-48210", False),
        (CODE, _call("lookup", {}), False),
    ],
)
def test_graders(record: CascadeRequest, answer: Answer, right: bool) -> None:
    assert grade(record, answer) is right


def test_answer_of_a_chat_completion() -> None:
    calls = _call("f", {})
    assert answer_of({"choices": [{"message": {"content": None, "tool_calls": calls}}]}) == calls
    assert answer_of({"choices": [{"message": {"content": "85"}}]}) == "85"
    assert answer_of({"choices": [{"message": {"content": None}}]}) == ""


def test_records_round_trip_through_json_lines(tmp_path: Path) -> None:
    records = mixed(5, 30, kinds=ALL_KINDS, model="small")
    assert list(read(write(tmp_path / "c.jsonl", records))) == records
    assert {r.body["model"] for r in records} == {"small"}
    out = tmp_path / "cli.jsonl"
    assert main(["--kind", "mixed-hard", "--count", "9", "--seed", "5", "--out", str(out)]) == 0
    assert list(read(out)) == mixed(5, 9, kinds=ALL_KINDS)
    with pytest.raises(ValueError, match="unknown kind"):
        CascadeRequest.from_line({**records[0].line(), "kind": "poetry"})
