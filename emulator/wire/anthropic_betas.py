"""The ``anthropic-beta`` header as Anthropic's API reads it: feature names it knows, or a 400.

The header holds comma-separated beta names (``interleaved-thinking-2025-05-14,
context-1m-2025-08-07``); the API refuses a request naming any it does not know. The
emulator knows the few below, real names of Anthropic's betas that clients (and a
gateway passing them on) send with Messages requests. It changes nothing for them: it
only counts, in ``GET /emulator/stats``, which betas reached it.
"""

from __future__ import annotations

from emulator.request_parsing import BadRequest

BETA_HEADER = "anthropic-beta"
KNOWN_BETAS = frozenset(
    {
        "interleaved-thinking-2025-05-14",
        "fine-grained-tool-streaming-2025-05-14",
        "context-1m-2025-08-07",
        "context-management-2025-06-27",
        "token-efficient-tools-2025-02-19",
        "prompt-caching-2024-07-31",
        "output-128k-2025-02-19",
        "web-search-2025-03-05",
    }
)


def read_betas(header: str | None) -> tuple[str, ...]:
    """The beta names of an ``anthropic-beta`` header, in order, each once; raises
    BadRequest naming those the emulator does not know."""
    names = tuple(dict.fromkeys(name.strip() for name in (header or "").split(",")))
    names = tuple(name for name in names if name)
    unknown = [name for name in names if name not in KNOWN_BETAS]
    if unknown:
        quoted = ", ".join(f"`{name}`" for name in unknown)
        message = (
            f"Unexpected value(s) {quoted} for the `{BETA_HEADER}` header. Please consult "
            "our documentation at docs.claude.com or try again without the header."
        )
        raise BadRequest(message, BETA_HEADER)
    return names
