"""``tools`` requests: 1-3 tools offered, a user message that asks for one by name with every
argument stated as ``name: value``.

Five tools with JSON-schema parameters (strings, an enum, an integer or a number; every
parameter required, no others allowed). A request offers the one it wants and up to two
others, in a random order, and its user message says why, then ``Please call TOOL with
a: 1, b: 2.`` (or a like phrasing), the one tool it names. Values hold no comma or full
stop, so the emulator's oracle reads them (``emulator/content/stated_values.py``). Truth:
``{"name": TOOL, "arguments": {...}}``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.workloads.cascade.records import CascadeRequest

MAX_TOKENS = 128
SYSTEM = "You are an assistant that can call tools. Call a tool when the user asks for one."

Draw = Callable[[random.Random], Any]


@dataclass(frozen=True)
class Parameter:
    name: str
    schema: dict[str, Any]
    draw: Draw


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    reasons: tuple[str, ...]
    """Why a user would want it: the message's first sentence."""
    distinct: tuple[str, ...] = ()
    """Parameters whose values differ in a call (a conversion between two currencies)."""

    def arguments(self, rng: random.Random) -> dict[str, Any]:
        """Values for every parameter, drawn again until the distinct ones differ."""
        while True:
            drawn = {p.name: p.draw(rng) for p in self.parameters}
            if len({str(drawn[name]) for name in self.distinct}) == len(self.distinct):
                return drawn

    def definition(self) -> dict[str, Any]:
        """The tool as OpenAI's ``tools`` entry (strict: all required, nothing else)."""
        schema = {
            "type": "object",
            "properties": {p.name: p.schema for p in self.parameters},
            "required": [p.name for p in self.parameters],
            "additionalProperties": False,
        }
        function = {
            "name": self.name,
            "description": self.description,
            "parameters": schema,
            "strict": True,
        }
        return {"type": "function", "function": function}


def _enum(name: str, options: tuple[str, ...]) -> Parameter:
    schema = {"type": "string", "enum": list(options)}
    return Parameter(name, schema, lambda rng: rng.choice(options))


def _integer(name: str, low: int, high: int) -> Parameter:
    schema = {"type": "integer", "minimum": low, "maximum": high}
    return Parameter(name, schema, lambda rng: rng.randint(low, high))


def _string(name: str, options: tuple[str, ...]) -> Parameter:
    return Parameter(name, {"type": "string"}, lambda rng: rng.choice(options))


_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD")
_CITIES = ("Oslo", "Lisbon", "Nairobi", "Osaka", "Denver", "Porto", "Krakow", "Lima", "Perth")
_PEOPLE = ("Sam Okafor", "Priya Nair", "Lena Fischer", "Tom Becker", "Ana Lima", "Wei Chen")

TOOLS: tuple[Tool, ...] = (
    Tool(
        "get_weather",
        "Current weather for a city.",
        (_string("city", _CITIES), _enum("unit", ("celsius", "fahrenheit"))),
        ("I am packing for a trip and need the forecast.", "I want to know if I need a coat."),
    ),
    Tool(
        "create_ticket",
        "Open a ticket in the IT help desk.",
        (
            _string(
                "title",
                (
                    "Printer on floor 3 is jammed",
                    "VPN drops every hour",
                    "Laptop battery is swelling",
                    "Cannot log in to payroll",
                    "Projector in room 12 flickers",
                ),
            ),
            _enum("priority", ("low", "medium", "high", "urgent")),
            _string("assignee", _PEOPLE),
        ),
        ("Something at the office is broken.", "I need IT to look at a problem."),
    ),
    Tool(
        "convert_currency",
        "Convert an amount of money from one currency to another.",
        (
            Parameter("amount", {"type": "number"}, lambda rng: rng.randint(100, 500_000) / 100),
            _enum("from_currency", _CURRENCIES),
            _enum("to_currency", _CURRENCIES),
        ),
        ("I am paying an invoice from abroad.", "I need to budget for a trip."),
        distinct=("from_currency", "to_currency"),
    ),
    Tool(
        "set_reminder",
        "Remind the user of something after a number of minutes.",
        (
            _string(
                "text",
                ("call the dentist", "water the plants", "join the standup", "take the bread out"),
            ),
            _integer("minutes", 5, 240),
        ),
        ("I keep forgetting things today.", "I am about to get busy."),
    ),
    Tool(
        "book_table",
        "Book a table at a restaurant.",
        (
            _string("restaurant", ("Blue Fig", "Casa Lume", "The Old Mill", "Noodle Bar 88")),
            _integer("party_size", 1, 12),
            _enum("day", ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday")),
        ),
        ("We are going out for dinner this week.", "It is my friend's birthday soon."),
    ),
)
_ASKS = ("Please call {tool} with {arguments}.", "Use {tool} with {arguments}.")


def request(rng: random.Random, request_id: str, model: str) -> CascadeRequest:
    """A call to one tool of 1-3 offered, its arguments stated."""
    wanted = rng.choice(TOOLS)
    others = [tool for tool in TOOLS if tool is not wanted]
    offered = [wanted, *rng.sample(others, rng.randint(0, 2))]
    rng.shuffle(offered)
    arguments = wanted.arguments(rng)
    stated = ", ".join(f"{name}: {_written(value)}" for name, value in arguments.items())
    ask = rng.choice(_ASKS).format(tool=wanted.name, arguments=stated)
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{rng.choice(wanted.reasons)} {ask}"},
        ],
        "tools": [tool.definition() for tool in offered],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }
    truth = {"name": wanted.name, "arguments": arguments}
    return CascadeRequest(request_id, "tools", wanted.name, body, truth)


def _written(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)
