"""``CueMapMemory``: long-term memory for classic chains (``ConversationChain``, ``LLMChain``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuemap_integrations import CueMap, RecallResult, ValidationError
from cuemap_integrations.formatting import TEMPLATES, ContextTemplate

from ._extra import missing_extra
from ._recall import (
    CaptureMode,
    MemoryBlock,
    RecallSpec,
    acapture_exchange,
    arecall,
    build_block,
    capture_exchange,
    check_hybrid,
    recall,
)

try:
    from langchain_classic.base_memory import BaseMemory
    from langchain_classic.memory.utils import get_prompt_input_key
    from langchain_core.messages import SystemMessage
    from pydantic import ConfigDict, Field, model_validator
    from typing_extensions import Self
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra(error) from None

__all__ = ["CueMapMemory"]


class CueMapMemory(BaseMemory):
    """Recalled memories as a chain input; each exchange captured after the chain runs.

    ``load_memory_variables(inputs)`` recalls for the chain's input (one session turn when
    ``session_id`` is set, so follow-ups find what the conversation was about) and returns the
    block under ``memory_key``; ``save_context(inputs, outputs)`` captures the exchange (user
    input and AI output) with ``CueMap.capture``.

    Args:
        cuemap: the store (not serialized).
        memory_key: the prompt variable the block fills (default ``"history"``, which is what
            ``ConversationChain``'s prompt expects).
        input_key / output_key: which input is the user's message and which output the
            answer; None detects them like LangChain's memories do (the one input that is not
            a memory variable or ``stop``; the only output, else ``"output"``).
        return_messages: False gives the block as a string; True as ``[SystemMessage(block)]``
            (``[]`` when nothing was recalled), for a ``MessagesPlaceholder``.
        session_id: the conversation; None recalls statelessly (each call on its own).
        namespace: the store namespace recalled from and captured into.
        k / budget_tokens: memories recalled per call / the block's token budget.
        capture_mode: ``"rules"`` (default) or ``"all"`` (every turn, as a transcript).
        hybrid / template: as for :class:`~langchain_cuemap.CueMapMiddleware`.

    ``clear()`` forgets everything in ``namespace`` (memories and recall sessions): give each
    conversation or user its own namespace if other memories must survive it.

    Example:
        >>> memory = CueMapMemory(cuemap=CueMap(), session_id="chat-1")
        >>> memory.save_context({"input": "Remember that the API uses port 8001."},
        ...                     {"response": "Noted."})
        >>> block = memory.load_memory_variables({"input": "which port?"})["history"]
        >>> print(" / ".join(line[:26] for line in block.splitlines()))
        Long-term memory (referenc / Conventions: / - the API uses port 8001 (
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    cuemap: CueMap = Field(exclude=True, repr=False)
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    session_id: str | None = None
    namespace: str = "default"
    k: int = 8
    budget_tokens: int = Field(default=600, ge=0)
    capture_mode: CaptureMode = "rules"
    hybrid: bool | None = None
    template: ContextTemplate | str = "en"

    @model_validator(mode="after")
    def _valid(self) -> Self:
        self._spec()
        check_hybrid(self.cuemap, self.hybrid)
        if not isinstance(self.template, ContextTemplate) and self.template not in TEMPLATES:
            raise ValidationError("template", self.template, "en, zh or a ContextTemplate")
        return self

    @property
    def memory_variables(self) -> list[str]:
        """The one variable this memory fills: ``memory_key``."""
        return [self.memory_key]

    def _spec(self) -> RecallSpec:
        return RecallSpec(k=self.k, namespace=self.namespace, hybrid=self.hybrid)

    # ------------------------------------------------------------------ loading
    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Recall for the user's input; ``{memory_key: block}``."""
        query = self._user_text(inputs)
        return self._variables(query, recall(self.cuemap, query, self._spec(), self.session_id))

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async :meth:`load_memory_variables` (recall runs in a worker thread)."""
        query = self._user_text(inputs)
        result = await arecall(self.cuemap, query, self._spec(), self.session_id)
        return self._variables(query, result)

    def recall_block(self, inputs: dict[str, Any]) -> MemoryBlock:
        """What :meth:`load_memory_variables` would add, with the hits and why they were found.

        Note that this is a recall like any other: with a session it is a turn.
        """
        query = self._user_text(inputs)
        return self._block(query, recall(self.cuemap, query, self._spec(), self.session_id))

    def _block(self, query: str, result: RecallResult) -> MemoryBlock:
        return build_block(
            result, query=query, namespace=self.namespace, session_id=self.session_id,
            budget_tokens=self.budget_tokens, template=self.template,
        )  # fmt: skip

    def _variables(self, query: str, result: RecallResult) -> dict[str, Any]:
        text = self._block(query, result).text
        if self.return_messages:
            return {self.memory_key: [SystemMessage(content=text)] if text else []}
        return {self.memory_key: text}

    def _user_text(self, inputs: Mapping[str, Any]) -> str:
        key = self.input_key or get_prompt_input_key(dict(inputs), self.memory_variables)
        if key not in inputs:
            raise ValidationError("input_key", key, f"one of the chain inputs {sorted(inputs)}")
        return str(inputs[key])

    # ------------------------------------------------------------------ saving
    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Capture the exchange: the user's input and the AI's output."""
        capture_exchange(self.cuemap, self._exchange(inputs, outputs), session_id=self.session_id,
                         namespace=self.namespace, mode=self.capture_mode)  # fmt: skip

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Async :meth:`save_context` (``CueMap.acapture``)."""
        await acapture_exchange(
            self.cuemap, self._exchange(inputs, outputs), session_id=self.session_id,
            namespace=self.namespace, mode=self.capture_mode,
        )  # fmt: skip

    def _exchange(
        self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]
    ) -> list[tuple[str, str]]:
        return [("user", self._user_text(inputs)), ("assistant", self._output_text(outputs))]

    def _output_text(self, outputs: Mapping[str, Any]) -> str:
        if self.output_key is not None:
            key = self.output_key
        elif len(outputs) == 1:
            key = next(iter(outputs))
        elif "output" in outputs:
            key = "output"
        else:
            raise ValidationError("output_key", None, f"one of {sorted(outputs)} (set it)")
        if key not in outputs:
            raise ValidationError("output_key", key, f"one of the outputs {sorted(outputs)}")
        value = outputs[key]
        return value if isinstance(value, str) else str(getattr(value, "content", value))

    def clear(self) -> None:
        """Forget every memory and recall session of this memory's namespace."""
        self.cuemap.forget(namespace=self.namespace, everything=True)
