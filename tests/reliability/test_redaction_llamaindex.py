"""A secret written through each LlamaIndex write path (retriever nodes, CueMapMemory, the memory
block's flush) never reaches the SQLite file nor the context given to a model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.memory.cuemap import CueMapMemory, CueMapMemoryBlock  # noqa: E402
from llama_index.retrievers.cuemap import CueMapRetriever  # noqa: E402

from cuemap_integrations import CueMap  # noqa: E402
from tests.adapters.llamaindex.conftest import (  # noqa: E402, F401 (autouse: a loop per sync test)
    _event_loop_for_sync_tests,
)

from .secret_checks import QUERY, SAID, assert_redacted  # noqa: E402


def _user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def test_retriever_nodes(tmp_path: Path) -> None:
    db = tmp_path / "li.db"
    with CueMap(db) as cm:
        retriever = CueMapRetriever.from_defaults(cuemap=cm, nodes=[TextNode(text=SAID)])
        shown = [n.node.get_content() for n in retriever.retrieve(QUERY)]
    assert_redacted(db, *shown)


def test_memory_put_and_get(tmp_path: Path) -> None:
    db = tmp_path / "li.db"
    with CueMap(db) as cm:
        with CueMapMemory.from_defaults(cuemap=cm, session_id="a", capture="all") as memory:
            memory.put(_user(SAID))
        with CueMapMemory.from_defaults(cuemap=cm, session_id="b") as other:
            shown = [str(m.content) for m in other.get(input=QUERY)]
    assert_redacted(db, *shown)


async def test_memory_block_flush(tmp_path: Path) -> None:
    db = tmp_path / "li.db"
    with CueMap(db) as cm:
        block = CueMapMemoryBlock(cuemap=cm, capture="all")
        await block.aput([_user(SAID)])
        shown = await block.aget([_user(QUERY)])
    assert_redacted(db, shown)
