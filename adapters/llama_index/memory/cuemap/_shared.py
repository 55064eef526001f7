"""What ``CueMapMemory`` and ``CueMapMemoryBlock`` share: reading messages, one recall per turn,
capture without repeats."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock

from cuemap_integrations import RecallResult
from cuemap_integrations.formatting import FormattedContext, format_context
from cuemap_integrations.tokens import TokenCounter, load_encoding

__all__ = [
    "CaptureMode",
    "CapturedSet",
    "TemplateName",
    "TurnCache",
    "capture_items",
    "counter_for",
    "format_block",
    "latest_user_text",
    "message_text",
]

CaptureMode = Literal["rules", "all", "none"]
"""``"rules"``: capture rule matches in user turns; ``"all"``: keep every user and assistant turn
as an ``event`` (a transcript); ``"none"``: capture nothing."""

TemplateName = Literal["en", "zh"]

_CAPTURED_ROLES = (MessageRole.USER, MessageRole.ASSISTANT)
_MAX_REMEMBERED = 1000  # bound on message fingerprints kept to skip re-captures


def message_text(message: ChatMessage) -> str:
    """The text blocks of a message, joined by newlines (tool calls and images have none)."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def latest_user_text(messages: Sequence[ChatMessage]) -> str:
    """The text of the last user message with text, or ``""``."""
    for message in reversed(messages):
        if message.role == MessageRole.USER:
            text = message_text(message).strip()
            if text:
                return text
    return ""


def counter_for(encoding: str | TokenCounter) -> TokenCounter:
    """A token counter: the one given, or the offline encoding of that name."""
    return encoding if isinstance(encoding, TokenCounter) else load_encoding(encoding)


def format_block(
    result: RecallResult, budget: int, counter: TokenCounter, template: TemplateName
) -> FormattedContext:
    """The recalled memories as one block of at most ``budget`` tokens (exact count)."""
    return format_context(result, budget_tokens=budget, encoding=counter, template=template)


class TurnCache:
    """The last recall and the turn it belongs to.

    LlamaIndex asks a memory for its messages more than once per user turn (an agent calls
    ``aget`` again after every tool call); each continuous-recall session turn must be one
    user turn, so a repeated ask with the same key reuses the recall.
    """

    def __init__(self) -> None:
        self.key: Hashable | None = None
        self.result: RecallResult | None = None

    def get(self, key: Hashable) -> RecallResult | None:
        return self.result if key == self.key else None

    def put(self, key: Hashable, result: RecallResult) -> None:
        self.key, self.result = key, result

    def clear(self) -> None:
        self.key, self.result = None, None


def _fingerprint(role: str, text: str) -> str:
    return hashlib.sha256(f"{role}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


class CapturedSet:
    """Fingerprints of the messages already captured, so a message put twice (or a history
    set again) is read once; the store's own duplicate check covers the rest."""

    def __init__(self) -> None:
        self._seen: dict[str, None] = {}

    def fresh(self, messages: Iterable[ChatMessage]) -> list[tuple[str, dict[str, Any]]]:
        """``(fingerprint, {"role", "content"})`` of the user and assistant turns not seen yet."""
        out: dict[str, dict[str, Any]] = {}
        for message in messages:
            text = message_text(message)
            if message.role not in _CAPTURED_ROLES or not text.strip():
                continue
            role = MessageRole(message.role).value
            key = _fingerprint(role, text)
            if key not in self._seen:
                out[key] = {"role": role, "content": text}
        return list(out.items())

    def mark(self, fingerprints: Iterable[str]) -> None:
        for key in fingerprints:
            self._seen[key] = None
        while len(self._seen) > _MAX_REMEMBERED:
            del self._seen[next(iter(self._seen))]

    def clear(self) -> None:
        self._seen.clear()


def capture_items(fresh: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The messages of :meth:`CapturedSet.fresh` in the form ``CueMap.capture`` reads."""
    return [item for _, item in fresh]
