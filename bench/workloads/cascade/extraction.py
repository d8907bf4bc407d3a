"""``extraction`` and ``nested-extraction`` requests: a short paragraph, a strict JSON schema.

``extraction``: a person, product, order or pet, with 3-6 of its six fields (its name
always; strings, integers, an enum, a boolean), stated one a sentence in a random order
after a sentence that introduces it: ``Age: 34.``, ``The home city is Porto.``, ``Their
role is Designer.`` (an enum's value in any case, a boolean as yes or no). The request asks
for exactly those fields (``response_format`` ``json_schema``, strict: all required,
nothing else). Truth: the fields' values.

``nested-extraction`` (the always-hard kind): a dispatch note with a customer (name,
e-mail, tier) and a delivery (city, packages, signature required) as two nested objects,
six fields, among a warehouse city, a packer's name and an earlier delivery's city that
are not asked for.

Every statement is ``label: value`` or ``... label is value``, the label the field's name
as words, which is what the emulator's oracle reads (``emulator/content/stated_values.py``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.workloads.cascade.records import CascadeRequest

MAX_TOKENS = 200
NESTED_MAX_TOKENS = 256
SYSTEM = "You are a careful data-entry assistant. Reply with JSON only."
FIELDS = (3, 6)

Draw = Callable[[random.Random], Any]
_FIRST = ("Dana", "Ana", "Tom", "Priya", "Wei", "Lena", "Omar", "Grace", "Mateo", "Yuki")
_LAST = ("Reyes", "Lima", "Becker", "Nair", "Chen", "Fischer", "Haddad", "Okafor", "Silva")
_CITIES = ("Porto", "Oslo", "Nairobi", "Osaka", "Denver", "Krakow", "Lima", "Perth", "Leeds")


@dataclass(frozen=True)
class Field:
    name: str
    schema: dict[str, Any]
    draw: Draw
    listed: bool = False
    """Stated as ``Label: value`` only (``Its vaccinated is no`` reads badly)."""

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")


@dataclass(frozen=True)
class Entity:
    name: str
    pronoun: str
    opener: str
    """The introducing sentence; ``{}`` is the first field's value."""
    fields: tuple[Field, ...]
    """The first is always asked for."""


def _person(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _choice(*options: object) -> Draw:
    return lambda rng: rng.choice(options)


def _between(low: int, high: int) -> Draw:
    return lambda rng: rng.randint(low, high)


def _string(name: str, draw: Draw, *, listed: bool = False) -> Field:
    return Field(name, {"type": "string"}, draw, listed)


def _integer(name: str, low: int, high: int, *, listed: bool = False) -> Field:
    return Field(name, {"type": "integer"}, _between(low, high), listed)


def _enum(name: str, *options: str) -> Field:
    return Field(name, {"type": "string", "enum": list(options)}, _choice(*options))


def _boolean(name: str) -> Field:
    return Field(name, {"type": "boolean"}, _choice(True, False), listed=True)


ENTITIES: tuple[Entity, ...] = (
    Entity(
        "person",
        "Their",
        "{} joined the team last spring.",
        (
            _string("full_name", _person),
            _integer("age", 19, 70),
            _string("home_city", _choice(*_CITIES)),
            _enum("role", "engineer", "designer", "manager", "analyst", "nurse", "teacher"),
            _boolean("works_remotely"),
            _integer("years_employed", 0, 30, listed=True),
        ),
    ),
    Entity(
        "product",
        "Its",
        "We have added the {} to the catalogue.",
        (
            _string("product_name", _choice("Kestrel Kettle", "Trail Lamp", "Desk Fan Mini")),
            _string("brand", _choice("Northwind", "Alder", "Brightside", "Fjell")),
            _enum("category", "kitchen", "garden", "office", "outdoor", "toys"),
            _integer("stock_count", 0, 500),
            _integer("warranty_years", 1, 5, listed=True),
            _boolean("waterproof"),
        ),
    ),
    Entity(
        "order",
        "Its",
        "Order {} came in this morning.",
        (
            _integer("order_number", 10_000, 99_999),
            _string("customer_name", _person),
            _enum("status", "pending", "shipped", "delivered", "cancelled", "returned"),
            _integer("quantity", 1, 20),
            _boolean("gift_wrapped"),
            _string("ship_to_city", _choice(*_CITIES), listed=True),
        ),
    ),
    Entity(
        "pet",
        "Its",
        "{} visited the clinic today.",
        (
            _string("pet_name", _choice("Biscuit", "Luna", "Pepper", "Milo", "Juniper")),
            _enum("species", "dog", "cat", "rabbit", "parrot", "tortoise"),
            _integer("age", 1, 18),
            _string("owner_name", _person),
            _boolean("vaccinated"),
            _integer("weight_kg", 1, 60, listed=True),
        ),
    ),
)


def request(rng: random.Random, request_id: str, model: str) -> CascadeRequest:
    """An entity's paragraph, and a schema asking for the fields it states."""
    entity = rng.choice(ENTITIES)
    first, *others = entity.fields
    fields = [first, *rng.sample(others, rng.randint(FIELDS[0], FIELDS[1]) - 1)]
    truth = {field.name: field.draw(rng) for field in fields}
    statements = [_statement(rng, entity.pronoun, f, truth[f.name]) for f in fields]
    rng.shuffle(statements)
    paragraph = " ".join([entity.opener.format(truth[first.name]), *statements])
    keys = ", ".join(field.name for field in fields)
    ask = f"Extract the {entity.name} described below as JSON with the keys {keys}."
    schema = _object({field.name: field.schema for field in fields})
    body = _body(model, f"{ask}\n\n{paragraph}", entity.name, schema, MAX_TOKENS)
    return CascadeRequest(request_id, "extraction", entity.name, body, truth)


def nested_request(rng: random.Random, request_id: str, model: str) -> CascadeRequest:
    """A dispatch note, and a nested six-field schema (the always-hard kind)."""
    name = _person(rng)
    customer = {
        "name": name,
        "email": name.lower().replace(" ", ".") + "@example.com",
        "tier": rng.choice(_TIERS),
    }
    city, earlier, warehouse = rng.sample(_CITIES, 3)
    delivery = {
        "city": city,
        "packages": rng.randint(1, 9),
        "signature_required": rng.random() < 0.5,
    }
    statements = [
        *(_nested_statement(rng, "customer", key, value) for key, value in customer.items()),
        *(_nested_statement(rng, "delivery", key, value) for key, value in delivery.items()),
        f"The previous delivery went to {earlier}.",
    ]
    rng.shuffle(statements)
    opener = f"Dispatch note from the {warehouse} warehouse, packed by {_person(rng)}."
    ask = (
        'Extract the shipment below as JSON: an object with "customer" (name, email, tier) '
        'and "delivery" (city, packages, signature_required).'
    )
    text = f"{ask}\n\n{' '.join([opener, *statements])}"
    body = _body(model, text, "shipment", NESTED_SCHEMA, NESTED_MAX_TOKENS)
    truth = {"customer": customer, "delivery": delivery}
    return CascadeRequest(request_id, "nested-extraction", "shipment", body, truth)


def _statement(rng: random.Random, pronoun: str, field: Field, value: object) -> str:
    written = _written(rng, value, enum="enum" in field.schema)
    form = 0 if field.listed else rng.randrange(3)
    if form == 0:
        return f"{field.label.capitalize()}: {written}."
    return f"{'The' if form == 1 else pronoun} {field.label} is {written}."


def _nested_statement(rng: random.Random, parent: str, key: str, value: object) -> str:
    label, written = key.replace("_", " "), _written(rng, value, enum=key == "tier")
    if rng.random() < 0.5 and isinstance(value, str):
        return f"The {parent}'s {label} is {written}."
    return f"{parent.capitalize()} {label}: {written}."


def _written(rng: random.Random, value: object, *, enum: bool) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if enum and rng.random() < 0.5:
        return str(value).capitalize()  # as a person would write it
    return str(value)


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _body(
    model: str, text: str, name: str, schema: dict[str, Any], max_tokens: int
) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        },
        "max_tokens": max_tokens,
        "temperature": 0,
    }


_TIERS: Sequence[str] = ("bronze", "silver", "gold", "platinum")
NESTED_SCHEMA = _object(
    {
        "customer": _object(
            {
                "name": {"type": "string"},
                "email": {"type": "string"},
                "tier": {"type": "string", "enum": list(_TIERS)},
            }
        ),
        "delivery": _object(
            {
                "city": {"type": "string"},
                "packages": {"type": "integer"},
                "signature_required": {"type": "boolean"},
            }
        ),
    }
)
