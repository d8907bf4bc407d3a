"""The quality views a snapshot offers, looked up only for the backends a policy asks for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from gateway.quality.book import QualityBook
from policies.base import QualityView


class QualityViews(Mapping[str, QualityView]):
    """`snapshot.quality`: a profile without quality policies pays nothing for it."""

    __slots__ = ("_backends", "_book", "_model", "_seen")

    def __init__(self, book: QualityBook, backends: Sequence[str], model: str) -> None:
        self._book = book
        self._backends = backends
        self._model = model
        self._seen: dict[str, QualityView] = {}

    def __getitem__(self, name: str) -> QualityView:
        view = self._seen.get(name)
        if view is None:
            if name not in self._backends:
                raise KeyError(name)
            view = self._seen[name] = self._book.view(name, self._model)
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._backends)

    def __len__(self) -> int:
        return len(self._backends)
