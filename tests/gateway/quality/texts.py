"""Realistic model outputs, healthy and degenerate, for the text signals' tests."""

# ruff: noqa: RUF001  (text in other scripts is the point of these tests)

from __future__ import annotations

import json
import random

PROSE = (
    "The history of the railway in Britain begins with the wagonways of the seventeenth "
    "century, on which horses pulled coal from the pits to the rivers. When Richard "
    "Trevithick ran a steam locomotive along a tramroad in south Wales in 1804, few "
    "people imagined that within fifty years the country would be crossed by thousands "
    "of miles of track. The Stockton and Darlington line opened in 1825, and the "
    "Liverpool and Manchester followed in 1830 as the first line to carry passengers on "
    "a timetable, hauled entirely by steam. Investment soon turned into a mania: in the "
    "1840s Parliament approved hundreds of schemes, many of which were never built, and "
    "fortunes were lost as quickly as they had been made. Yet the network that survived "
    "changed the way the country worked, ate and travelled. Fresh fish reached inland "
    "towns, newspapers arrived on the morning of their printing, and clocks across the "
    "land were set to the same time so that the trains could keep to it."
)

PYTHON = '''def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping intervals; the input need not be sorted."""
    if not intervals:
        return []
    ordered = sorted(intervals)
    merged = [ordered[0]]
    for start, end in ordered[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def test_merge_intervals() -> None:
    assert merge_intervals([]) == []
    assert merge_intervals([(1, 3)]) == [(1, 3)]
    assert merge_intervals([(1, 3), (2, 4)]) == [(1, 4)]
    assert merge_intervals([(5, 6), (1, 2)]) == [(1, 2), (5, 6)]
    assert merge_intervals([(1, 10), (2, 3), (4, 5)]) == [(1, 10)]
    assert merge_intervals([(1, 2), (2, 3), (3, 4)]) == [(1, 4)]
'''

TABLE = """| Model | Parameters | Context | Licence | Released |
| --- | --- | --- | --- | --- |
| Llama 3.1 8B | 8B | 128K | Llama 3.1 | 2024-07 |
| Llama 3.1 70B | 70B | 128K | Llama 3.1 | 2024-07 |
| Mistral 7B | 7.3B | 32K | Apache 2.0 | 2023-09 |
| Mixtral 8x7B | 46.7B | 32K | Apache 2.0 | 2023-12 |
| Qwen2.5 7B | 7.6B | 128K | Apache 2.0 | 2024-09 |
| Qwen2.5 72B | 72.7B | 128K | Qwen | 2024-09 |
| Gemma 2 9B | 9.2B | 8K | Gemma | 2024-06 |
| Gemma 2 27B | 27.2B | 8K | Gemma | 2024-06 |
| Phi-3 mini | 3.8B | 128K | MIT | 2024-04 |
"""

_PEOPLE = [
    ("Ada Lovelace", "ada@example.com", "admin"),
    ("Alan Turing", "alan@example.com", "editor"),
    ("Grace Hopper", "grace@example.com", "editor"),
    ("Edsger Dijkstra", "edsger@example.com", "viewer"),
    ("Barbara Liskov", "barbara@example.com", "viewer"),
    ("Donald Knuth", "don@example.com", "viewer"),
    ("Frances Allen", "fran@example.com", "editor"),
    ("John Backus", "john@example.com", "viewer"),
]
JSON_ARRAY = json.dumps(
    [
        {"id": i + 1, "name": name, "email": email, "role": role, "active": True, "team": "core"}
        for i, (name, email, role) in enumerate(_PEOPLE)
    ],
    indent=2,
)

NUMBERED = """Here is how to set up the project:

1. Install Python 3.11 or newer and make sure it is on your PATH.
2. Clone the repository and change into its directory.
3. Create a virtual environment with `python -m venv .venv`.
4. Activate the environment and install the package in editable mode.
5. Copy `config.example.yaml` to `config.yaml` and fill in your backends.
6. Run the test suite once to check that everything works.
7. Start the gateway with `switchyard serve config.yaml`.
8. Send a request to `http://localhost:8080/v1/chat/completions` to try it out.
"""

CHINESE = (
    "铁路的历史可以追溯到十九世纪初。一八二五年，世界上第一条公用铁路在英国开通，"
    "此后铁路迅速在欧洲和北美扩展。铁路改变了人们的生活方式，使长途旅行变得更加便宜和快捷，"
    "也让货物可以在几天之内运到很远的地方。今天，高速铁路把许多大城市连接在一起。"
)

LOOP_PHRASE = "the engine stops "
LOOP = LOOP_PHRASE * 60
PROSE_THEN_LOOP = PROSE + " And then " + LOOP_PHRASE * 40
SENTENCE_LOOP = (
    PROSE[:300]
    + " "
    + ("I am sorry, but I cannot help with that request because it is not allowed. " * 8)
)
CUT_MID_WORD = LOOP_PHRASE * 30 + "the eng"
CHINESE_LOOP = CHINESE[:40] + "我不知道这个问题的答案。" * 20
PARAGRAPH_LOOP = (PROSE[:600] + "\n\n") * 4

_SENTENCES = [sentence.strip() + "." for sentence in PROSE.split(". ") if sentence.strip()]


def _shuffled_rounds(rounds: int, seed: int = 7) -> str:
    """The prose's sentences in a fresh order each round: long, varied, never a loop."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(rounds):
        out += rng.sample(_SENTENCES, len(_SENTENCES))
    return " ".join(out)


LONG_ANSWER = _shuffled_rounds(16)
"""About 14K characters: longer than the repetition window."""
