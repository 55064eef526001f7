"""A LlamaIndex query engine over a memory store, offline.

``RetrieverQueryEngine.from_args(CueMapRetriever(...), llm=MockLLM())``: the retriever recalls
memories by cue (deterministic, with the reason for each hit), the engine builds the prompt an
LLM would answer from. ``MockLLM`` answers by echoing that prompt, so the script shows exactly
what a real model would be given. Questions go through one continuous-recall session, so
"how did we fix it?" is read in the light of the question before it.

Run: ``python examples/llamaindex_query_engine.py [--db FILE] [QUESTION ...]``
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.retrievers.cuemap import CueMapRetriever

from cuemap_integrations import CueMap

MEMORIES = [
    ("The API uses port 8001", "convention"),
    ("Never change the DB schema without a backup", "convention"),
    ("Orders were timing out because the Redis cache expired", "fact"),
    ("Fixed the order timeout with `curl -X POST /ops/clear-cache`", "fact"),
    ("Fixed the flaky login test by pinning Chrome", "fact"),
]
QUESTIONS = ["which port does the api use?", "why were orders timing out?", "how did we fix it?"]


def _context(prompt: str) -> list[str]:
    """The context section of the default QA prompt (between its dashed rules)."""
    parts = prompt.split("---------------------")
    return parts[1].strip().splitlines() if len(parts) >= 3 else prompt.splitlines()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", default=":memory:", help="SQLite store (default: in memory)")
    parser.add_argument("--session", default="query-engine-demo", help="recall session id")
    parser.add_argument("questions", nargs="*", help="questions (default: a short demo)")
    args = parser.parse_args(argv)

    with CueMap(args.db) as cm:
        if not len(cm):
            cm.add_many(
                [{"content": text, "type": kind, "source": "ops"} for text, kind in MEMORIES]
            )
        retriever = CueMapRetriever(cm, similarity_top_k=2, session_id=args.session)
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
        for question in args.questions or QUESTIONS:
            response = engine.query(question)
            print(f"Q: {question}")
            print("   sources:")
            for source in response.source_nodes:
                why = source.node.metadata["breakdown"]
                cues = ", ".join(why["matched_cues"] + why["session_cues"]) or "text match"
                print(f"   {source.score or 0.0:6.2f}  {source.node.get_content()}  [{cues}]")
            print("   the LLM was given (MockLLM echoes its prompt):")
            for line in _context(str(response)):
                print(f"      {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
