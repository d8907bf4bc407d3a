"""Gemini's `GenerateContentResponse`, as far as the adapter reads it (whole or streamed)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class _Wire(BaseModel):
    # Gemini adds fields over time (safety ratings, grounding, citations): ignored, not refused.
    model_config = ConfigDict(
        extra="ignore", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class FunctionCall(_Wire):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None


class Part(_Wire):
    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: FunctionCall | None = None


class Content(_Wire):
    role: str | None = None
    parts: list[Part] = []


class Candidate(_Wire):
    content: Content | None = None
    finish_reason: str | None = None

    @property
    def parts(self) -> list[Part]:
        return self.content.parts if self.content is not None else []


class UsageMetadata(_Wire):
    prompt_token_count: int = 0
    """Includes the cached tokens."""
    candidates_token_count: int = 0
    cached_content_token_count: int = 0
    thoughts_token_count: int = 0


class PromptFeedback(_Wire):
    block_reason: str | None = None


class GenerateContentResponse(_Wire):
    candidates: list[Candidate] = []
    usage_metadata: UsageMetadata | None = None
    prompt_feedback: PromptFeedback | None = None
    response_id: str | None = None

    @property
    def candidate(self) -> Candidate | None:
        """The one candidate the adapter asks for (candidateCount is at most 1)."""
        return self.candidates[0] if self.candidates else None

    @property
    def blocked(self) -> bool:
        """The prompt itself was refused: no candidate at all, only a block reason."""
        feedback = self.prompt_feedback
        return not self.candidates and feedback is not None and feedback.block_reason is not None
