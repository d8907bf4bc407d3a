"""Placement tags: what a backend is (`local`, `eu`, `no-retention`) and what a request
requires of the backend that serves it, as a set merged from every source that asks
(the route's `require_tags`, the `x-switchyard-require-tags` header; a client key's later).

A hard constraint: the router offers a route's policies only the members carrying every
required tag (`place`), so no profile, retry or fallback can leave the allowed set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import StringConstraints

from gateway.errors import InvalidRequest
from policies.filters.placement_filter import missing_tags_reason

TAG_PATTERN = r"^[a-z0-9][a-z0-9._:-]*$"
MAX_TAG_CHARS = 64
MAX_REQUESTED_TAGS = 16
"""Most distinct tags one request may ask for in its header."""
_MAX_HEADER_CHARS = 2048
_TAG = re.compile(TAG_PATTERN)
_GRAMMAR = (
    f"a tag: 1-{MAX_TAG_CHARS} characters of a-z, 0-9, '.', '_', ':', '-', "
    "starting with a letter or digit"
)

PlacementTag = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_TAG_CHARS, pattern=TAG_PATTERN)
]
"""A tag as written in the config: lowercase, so that matching never depends on case."""


@dataclass(frozen=True, slots=True)
class TagRequirement:
    """The tags a request's backend must all carry, and which source asked for which.

    Sources only add: nothing merged in later (a client key's tags, a fallback route's own)
    can relax what an earlier source required.
    """

    tags: frozenset[str] = frozenset()
    sources: tuple[tuple[str, frozenset[str]], ...] = ()
    """(source, its tags) in the order added: `route:NAME`, `header`, ..."""

    def require(self, source: str, tags: Iterable[str]) -> TagRequirement:
        """This requirement with `source`'s tags added (merged into an earlier entry of the
        same source); itself when that adds nothing."""
        added = frozenset(tags)
        if not added:
            return self
        sources = dict(self.sources)
        before = sources.get(source, frozenset())
        if added <= before:
            return self
        sources[source] = before | added
        return TagRequirement(self.tags | added, tuple(sources.items()))

    def describe(self) -> dict[str, Any]:
        return {
            "require_tags": sorted(self.tags),
            "sources": {source: sorted(tags) for source, tags in self.sources},
        }


NO_REQUIREMENT = TagRequirement()


@dataclass(frozen=True, slots=True)
class Placement:
    """A route's members checked against a request's requirement: those allowed to serve
    it, in the route's order, and what each excluded one lacks."""

    route: str
    requirement: TagRequirement
    allowed: tuple[str, ...]
    excluded: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def unmet(self) -> bool:
        """The tags required exclude every member: the route cannot serve, whatever the
        fleet's state. A route without members (a discovered entry with no address now)
        is not unmet: it has no candidate, as when every member is down."""
        return not self.allowed and bool(self.excluded)

    @property
    def members_phrase(self) -> str:
        """The members in words: `backend of route 'x'`, `... with tags eu, local`."""
        phrase = f"backend of route {self.route!r}"
        return f"{phrase} with tags {self._tags}" if self.requirement.tags else phrase

    def message(self) -> str:
        """Why the route cannot serve, when `unmet`."""
        return f"no backend of route {self.route!r} has tags {self._tags}"

    @property
    def _tags(self) -> str:
        return ", ".join(sorted(self.requirement.tags))

    def describe(self) -> dict[str, Any]:
        excluded = {name: missing_tags_reason(lacks) for name, lacks in self.excluded.items()}
        return {**self.requirement.describe(), "excluded": excluded}


def place(
    route: str,
    members: Sequence[str],
    tags: Mapping[str, frozenset[str]],
    requirement: TagRequirement,
) -> Placement:
    """Check each of `members` (backend names, with `tags` per backend) against `requirement`."""
    required = requirement.tags
    excluded = {name: required - tags[name] for name in members if not required <= tags[name]}
    allowed = tuple(name for name in members if name not in excluded)
    return Placement(route, requirement, allowed, excluded)


def header_tags(values: Sequence[str], header: str) -> frozenset[str]:
    """The tags a request header asks for: comma-separated, case-insensitive, surrounding
    spaces ignored; the values of a repeated header count together. A blank value asks
    for nothing; anything else malformed is refused (400) naming the header."""
    value = ",".join(values)
    if len(value) > _MAX_HEADER_CHARS:
        raise InvalidRequest(f"header {header}: longer than {_MAX_HEADER_CHARS} characters")
    if not value.strip():
        return frozenset()
    items = [item.strip().lower() for item in value.split(",")]
    for position, item in enumerate(items, 1):
        if len(item) > MAX_TAG_CHARS or not _TAG.fullmatch(item):
            shown = f"{item[:MAX_TAG_CHARS]!r}" + ("…" if len(item) > MAX_TAG_CHARS else "")
            raise InvalidRequest(f"header {header}: tag {position} ({shown}) is not {_GRAMMAR}")
    tags = frozenset(items)
    if len(tags) > MAX_REQUESTED_TAGS:
        raise InvalidRequest(
            f"header {header}: {len(tags)} tags; at most {MAX_REQUESTED_TAGS} may be required"
        )
    return tags
