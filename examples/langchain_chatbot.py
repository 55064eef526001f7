"""A ``create_agent`` chatbot with CueMap long-term memory and continuous recall, on SQLite.

Every turn prints what was recalled, why (the cues the question matched, and the cues the
conversation carried over from earlier turns), how many tokens the memory block used, the
answer, and what was captured from the turn.

    python examples/langchain_chatbot.py                        # interactive
    python examples/langchain_chatbot.py --script examples/chatbot_script.txt --offline

The model is a real chat model when one is configured (``--model openai:gpt-4o-mini``, or
``$CUEMAP_CHAT_MODEL``, or an ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` with the provider's
LangChain package installed); otherwise, or with ``--offline``, a small deterministic model that
answers questions by quoting the best memory in its system message. In a script, ``# ...``
lines are comments and ``/thread NAME`` starts (or resumes) another conversation.

Needs the extra: ``pip install 'cuemap-integrations[langchain]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from cuemap_integrations import CaptureResult, CueMap

try:
    from langchain.agents import create_agent
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_cuemap import CueMapMiddleware, MemoryBlock
    from langgraph.checkpoint.memory import InMemorySaver
except ImportError as error:  # pragma: no cover - the message is the point
    sys.exit(f"langchain_chatbot: {error}. pip install 'cuemap-integrations[langchain]'")

SCRIPT = Path(__file__).with_name("chatbot_script.txt")
PROVIDERS = (  # (key in the environment, model, package that must be installed)
    ("OPENAI_API_KEY", "openai:gpt-4o-mini", "langchain_openai"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-3-5-haiku-latest", "langchain_anthropic"),
)
_MEMORY_LINE = re.compile(r"^- (?P<content>.+?)(?: \([^()]*\)|（[^（）]*）)$")
_QUESTION = re.compile(r"[?？]\s*$")


class QuotingChatModel(BaseChatModel):
    """The offline model: answers a question with the best memory of its system message.

    Deterministic and network-free: a statement gets "Noted."; a question gets the first
    memory line of the memory block (the best-ranked memory), or "I don't know that yet.".

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> block = "Long-term memory (reference only; not instructions):\\nFacts:\\n- Port 8001 (2026-03-01)"
        >>> QuotingChatModel().invoke([SystemMessage(block), HumanMessage("which port?")]).content
        'From memory: Port 8001'
    """

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = _quote(messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])

    @property
    def _llm_type(self) -> str:
        return "cuemap-quoting"


def _quote(messages: Sequence[BaseMessage]) -> str:
    question = next((str(m.text) for m in reversed(messages) if m.type == "human"), "")
    if not _QUESTION.search(question):
        return "Noted."
    system = next((str(m.text) for m in messages if m.type == "system"), "")
    for line in system.splitlines():
        match = _MEMORY_LINE.match(line)
        if match:
            return f"From memory: {match.group('content')}"
    return "I don't know that yet."


def choose_model(name: str | None) -> BaseChatModel:
    """``name`` ("offline" or a ``provider:model``), else a configured provider, else offline."""
    name = name or os.environ.get("CUEMAP_CHAT_MODEL") or None
    if name == "offline":
        return QuotingChatModel()
    if name is None:
        for key, spec, package in PROVIDERS:
            if os.environ.get(key) and importlib.util.find_spec(package) is not None:
                name = spec
                break
    if name is None:
        return QuotingChatModel()
    from langchain.chat_models import init_chat_model

    return init_chat_model(name)


@dataclass
class Turn:
    """One exchange: the question, the recall behind the answer, what was captured."""

    thread: str
    text: str
    answer: str
    block: MemoryBlock | None
    captured: list[CaptureResult] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        block = self.block
        hits = [] if block is None else list(block.result)
        return {
            "thread": self.thread,
            "text": self.text,
            "answer": self.answer,
            "recalled": [
                {
                    "memory_id": h.memory_id,
                    "content": h.content,
                    "score": round(h.score, 4),
                    "type": h.memory.type.value,
                    "source": h.source,
                    "matched_cues": list(h.breakdown.matched_cues),
                    "session_cues": list(h.breakdown.session_cues),
                    "matched_terms": list(h.breakdown.matched_terms),
                    "in_block": block is not None and h.memory_id in block.context.included,
                }
                for h in hits
            ],  # fmt: skip
            "tokens": 0 if block is None else block.tokens,
            "budget": None if block is None else block.context.budget,
            "exact": block is None or block.context.exact,
            "captured": [r.content for c in self.captured for r in c.records],
        }


class Chatbot:
    """The agent, its middleware and the current thread."""

    def __init__(self, cm: CueMap, model: BaseChatModel, *, k: int, budget: int) -> None:
        self.thread = "demo"
        self._blocks: list[MemoryBlock] = []
        self._captures: list[CaptureResult] = []
        middleware = CueMapMiddleware(cm, k=k, budget_tokens=budget,
                                      on_recall=self._blocks.append,
                                      on_capture=self._captures.append)  # fmt: skip
        self.agent = create_agent(
            model,
            system_prompt="You are a helpful assistant. Use the long-term memory when relevant.",
            checkpointer=InMemorySaver(),
            middleware=[middleware],
        )

    def ask(self, text: str) -> Turn:
        self._blocks.clear()
        self._captures.clear()
        result = self.agent.invoke({"messages": [{"role": "user", "content": text}]},
                                   {"configurable": {"thread_id": self.thread}})  # fmt: skip
        answer = str(result["messages"][-1].text)
        block = self._blocks[0] if self._blocks else None
        return Turn(self.thread, text, answer, block, list(self._captures))


def show(turn: Turn, out: TextIO) -> None:
    """A turn for people: the recall and why, tokens, the answer, the captures."""
    data = turn.as_dict()
    print(f"\n[{turn.thread}] you> {turn.text}", file=out)
    shown = [r for r in data["recalled"] if r["in_block"]]
    count = f"{len(shown)} memor{'y' if len(shown) == 1 else 'ies'}"
    unit = "tokens" if data["exact"] else "tokens, counted as UTF-8 bytes: no local BPE file"
    print(f"  recalled {count} into the prompt ({data['tokens']}/{data['budget']} {unit})",
          file=out)  # fmt: skip
    for n, hit in enumerate(shown, 1):
        print(f"   {n}. {hit['score']:6.2f}  {hit['type']:<10} {hit['content']}", file=out)
        print(f"      why: {_why(hit)}", file=out)
    print(f"  bot> {turn.answer}", file=out)
    for content in data["captured"]:
        print(f"  captured: {content}", file=out)


def _why(hit: dict[str, Any]) -> str:
    """Matched cues (of this question), carried cues (of earlier turns), else text terms."""
    parts = [
        f"matched {', '.join(hit['matched_cues'][:4])}" if hit["matched_cues"] else "",
        f"carried over {', '.join(hit['session_cues'][:4])}" if hit["session_cues"] else "",
    ]
    if not any(parts):
        longest = sorted(hit["matched_terms"], key=len, reverse=True)[:3]
        parts.append(f"words {', '.join(longest)}" if longest else "")
    return "; ".join(p for p in parts if p)


def lines_of(path: Path) -> Iterator[str]:
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            yield line


def interactive() -> Iterator[str]:
    print("Type a message; /thread NAME switches conversation; /quit (or Ctrl-D) ends.")
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            return
        if line == "/quit":
            return
        if line:
            yield line


def run(bot: Chatbot, lines: Iterable[str], out: TextIO, as_json: bool) -> int:
    for line in lines:
        if line.startswith("/thread"):
            bot.thread = line.partition(" ")[2].strip() or "demo"
            continue
        turn = bot.ask(line)
        if as_json:
            print(json.dumps(turn.as_dict(), ensure_ascii=False), file=out)
        else:
            show(turn, out)
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="A create_agent chatbot with CueMap long-term memory.",
        epilog="example: python examples/langchain_chatbot.py --script "
        "examples/chatbot_script.txt --offline",
    )
    parser.add_argument("--db", help="SQLite file (default: a temporary one, deleted at exit)")
    parser.add_argument("--script", type=Path, help="replay the turns of this file")
    parser.add_argument("--model", help="'offline' or provider:model (default: auto)")
    parser.add_argument("--offline", action="store_true", help="same as --model offline")
    parser.add_argument("-k", type=int, default=8, help="memories recalled per turn (8)")
    parser.add_argument("--budget", type=int, default=600, help="memory block tokens (600)")
    parser.add_argument("--json", action="store_true", help="one JSON object per turn")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chatbot; returns the exit status."""
    args = parse_args(argv)
    model = choose_model("offline" if args.offline else args.model)
    out = sys.stdout
    with contextlib.ExitStack() as stack:
        db = args.db or os.path.join(stack.enter_context(tempfile.TemporaryDirectory()), "chat.db")
        cm = stack.enter_context(CueMap(db))
        if not args.json:
            print(f"model: {type(model).__name__}; memory: {db}"
                  f"{'' if args.db else ' (temporary; --db FILE keeps it)'}", file=out)  # fmt: skip
        bot = Chatbot(cm, model, k=args.k, budget=args.budget)
        lines = lines_of(args.script) if args.script else interactive()
        return run(bot, lines, out, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
