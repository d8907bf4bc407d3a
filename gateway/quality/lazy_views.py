"""The quality views a snapshot offers, looked up only for the backends a policy asks for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from typing import TypeVar, overload

from gateway.quality.book.quality_book import QualityBook
from policies.snapshot import QualityView

T = TypeVar("T")


class QualityViews(Mapping[str, QualityView]):
    """`snapshot.quality`: a profile without quality policies pays nothing for it."""

    __slots__ = ("_backends", "_book", "_members", "_model", "_models", "_seen")

    def __init__(
        self,
        book: QualityBook,
        backends: Sequence[str],
        model: str,
        members: Set[str],
        models: Mapping[str, str] | None = None,
    ) -> None:
        """`members`: `backends` as a set, kept by the caller (the router, per route);
        `models`: the backends asked for another model than `model`, with that model."""
        self._book = book
        self._backends = backends
        self._members = members
        self._model = model
        self._models: Mapping[str, str] = models if models is not None else {}
        self._seen: dict[str, QualityView] = {}

    def __getitem__(self, name: str) -> QualityView:
        view = self.get(name)
        if view is None:
            raise KeyError(name)
        return view

    @overload
    def get(self, name: str, /) -> QualityView | None: ...

    @overload
    def get(self, name: str, /, default: QualityView | T) -> QualityView | T: ...

    def get(self, name: str, /, default: object = None) -> object:
        # Mapping.get goes through __getitem__ and an exception; policies call this
        # once per candidate and decision.
        view = self._seen.get(name)
        if view is None:
            if name not in self._members:
                return default
            model = self._models.get(name, self._model)
            view = self._seen[name] = self._book.view(name, model)
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._backends)

    def __len__(self) -> int:
        return len(self._backends)
