"""The README quickstart: store a few memories, recall, then follow up in a session."""

from cuemap_integrations import CueMap

with CueMap("quickstart.db") as cm:  # ":memory:" for a throw-away store
    if not len(cm):
        cm.add("The API uses port 8001", type="convention")
        cm.add("Never change the DB schema without a backup", type="convention")
        cm.add("Orders were timing out because the Redis cache expired", type="fact")
        cm.add("Fixed the order timeout with `curl -X POST /ops/clear-cache`", type="fact")
        cm.add("Fixed the flaky login test by pinning Chrome", type="fact")

    for hit in cm.recall("which port does the api use?", k=1):
        print(f"{hit.score:.2f}  {hit.content}")

    chat = cm.session("thread-42")  # continuous recall: turn 2 inherits turn 1's cues
    for question in ("why were orders timing out?", "how did we fix it?"):
        top = chat.recall(question, k=1)[0]
        print(f"{question!r} -> {top.content}  (session cues: {top.breakdown.session_cues[:3]})")
