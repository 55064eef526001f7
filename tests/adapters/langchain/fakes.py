"""Test doubles: a chat model that records every prompt it is given, and shared memories."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from cuemap_integrations import CueMap

# Turn 1 asks about the timeout; turn 2 "how did we fix it?" has no cue of its own. Stateless,
# the login, CSS and worker fixes rank above the order-timeout fix; continuous recall finds it.
ORDERS = [
    ("cause", "Orders were timing out because the Redis cache expired", "fact"),
    ("fix", "Fixed the order timeout by running curl -X POST /ops/clear-cache", "fact"),
    ("login", "Fixed the flaky login test by pinning Chrome", "fact"),
    ("css", "Fixed the broken CSS build by deleting node_modules", "fact"),
    ("port", "The API uses port 8001", "convention"),
    ("schema", "Never change the DB schema without a backup", "convention"),
]
FIX = "/ops/clear-cache"
TURN_1 = "why were orders timing out?"
TURN_2 = "how did we fix it?"


def load_orders(cm: CueMap, namespace: str = "default") -> CueMap:
    cm.add_many(
        [{"memory_id": i, "content": c, "type": t, "namespace": namespace} for i, c, t in ORDERS]
    )
    return cm


class RecordingChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that keeps every prompt it receives (``prompts``)."""

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: itertools.repeat("ok"))
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingChatModel:
        return self  # the answers are scripted: tools only need to be accepted

    def prompt_text(self, turn: int = -1) -> str:
        """All the text of one recorded prompt."""
        return "\n".join(str(m.text) for m in self.prompts[turn])
