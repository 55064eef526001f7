"""The README's context example: a token-budgeted memory block with a conflict note."""

from datetime import datetime, timezone

from cuemap_integrations import CueMap
from cuemap_integrations.formatting import format_context

day = iter([datetime(2026, 3, d, tzinfo=timezone.utc) for d in (1, 2, 3, 9)])
cm = CueMap(clock=lambda: datetime(2026, 3, 10, tzinfo=timezone.utc))
cm.add("I prefer answers as short bullet points", type="preference", created_at=next(day))
cm.add("The orders API uses POST", type="convention", created_at=next(day))
cm.add("Never change the DB schema without a backup", type="convention", created_at=next(day))
cm.add("The orders API uses GET since the v2 release", type="convention", created_at=next(day))

block = format_context(cm.recall("how should I call the orders api?", k=4), budget_tokens=120)
print(block.text)
print(f"-- {block.tokens}/{block.budget} tokens (exact={block.exact})")
