"""The README's LangChain section: a retriever, an agent's middleware, a LangGraph store."""

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_cuemap import CueMapMiddleware, CueMapRetriever, CueMapStore, MemoryBlock
from langgraph.checkpoint.memory import InMemorySaver

from cuemap_integrations import CueMap

cm = CueMap()  # CueMap("memory.db") to keep it
retriever = CueMapRetriever.from_texts(
    ["Orders were timing out because the Redis cache expired",
     "Fixed the order timeout with curl -X POST /ops/clear-cache",
     "Fixed the flaky login test by pinning Chrome"],
    cuemap=cm, k=1,
)  # fmt: skip
for question in ("why were orders timing out?", "how did we fix it?"):  # one thread = a session
    found = retriever.invoke(question, {"configurable": {"thread_id": "chat-1"}})
    print(f"{question} -> {found[0].page_content}")


def show(block: MemoryBlock) -> None:  # what went into the system message, and its size
    print(f"{block.query} -> {[hit.content for hit in block.result]} ({block.tokens} tokens)")


model = GenericFakeChatModel(messages=iter(["Noted.", "Port 8001."]))
memory = CueMapMiddleware(cm, budget_tokens=600, on_recall=show)
agent = create_agent(model, checkpointer=InMemorySaver(), middleware=[memory])
for text in ("Remember that the API uses port 8001.", "which port does the API use?"):
    agent.invoke({"messages": [{"role": "user", "content": text}]},
                 {"configurable": {"thread_id": "agent-1"}})  # fmt: skip
print("captured:", [m.content for m in cm.memories() if m.source == "chat"])

store = CueMapStore(cm)  # graph.compile(store=store) or create_agent(..., store=store)
store.put(("users", "ann"), "tz", {"content": "Ann works in the Berlin timezone"})
print("search:", [item.key for item in store.search(("users",), query="Ann's timezone?")])
