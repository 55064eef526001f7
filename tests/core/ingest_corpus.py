"""A fixed, varied corpus and a digest of everything ingest derives from it (public API only).

The digest in ``test_ingest_equivalence.py`` was computed with the code before the ingest speed-ups
(commit 1527219) by running :func:`text_digest` and :func:`store_digest` on it, so any change to
cues, terms, tokens, normalization, redaction, ids, records, index keys or rankings fails the test.
Only public functions (and ``CueMap._index_keys``, present before and after) are called here, so
the same module runs unchanged against the old code.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap
from cuemap_integrations.bench.scale import load_corpus, make_memory, memory_item
from cuemap_integrations.redact import RedactionPolicy, redact
from cuemap_integrations.text import content_terms, derive_cues, normalize, query_units, words
from tests.bench import tiny
from tests.conftest import ORDER_TIMEOUT_EN, ORDER_TIMEOUT_ZH

# Each fragment exercises one rule family (and its prefilter): URLs, quotations, code, dates,
# numbers, apostrophes, names, Chinese, secrets, personal data, case-folding corner letters.
FRAGMENTS = (
    "see https://api.example.com/v2/orders?id=7 for details",
    "HTTP://User:Pa55word@db.internal:5432/app",
    "postgresql://admin:s3cr3t@db:5432/prod",
    'she said "the blue door" twice',
    "it's 'quoted words' and don't forget o'clock",
    "run `curl -X POST /ops/clear-cache` then ```\nmake build\n```",
    "`kubectl get pods` failed",
    "on 2023-05-08 and 8 May, 2023, then May 9th, 2023 and June 2024",
    "2023年5月8日 我们开会",
    "2024/13/45 is no date but 1999.12.31 is",
    "latency 5 ms, 10 GB, 30 %, $20 and 10,000 users, port 8001",
    "v2.1 user_id config.yaml /ops/clear-cache main.py bob@example.com",
    "New York and the API team met Caroline on Monday",
    "GitHub Actions runs on EC2 with Redis",
    "订单超时是因为缓存过期，为什么没有重试？",
    "「引号里的词」和“中文引号”",
    "key sk-proj-Ab3dEf6hIj9kLm2nOp5q and password=hunter2",
    "Authorization: Bearer abcdefghijklmnopqrstuvwx12345",
    "token=abcdef123456 <private>my diary</private>",
    "call +1 (555) 123-4567 or 555-123-4567 or 13800138000",
    "my password is Summer2024! and the API key: ABCDEFGH12345678",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789 AKIAABCDEFGHIJKLMNOP",
    "eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4fwpM",
    "密码是 abc123456 密钥：qwertyuiop",
    "\u212aelvin \u0130stanbul \u0131\u017f PASSWORD=x9 AUTHORIZATION: Basic dXNlcjpwYXNz",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
    "ＡＢＣ，Redis！ full—width … text\u3000here",
    "110105199003071234 is an id-like number",
    "plain words with nothing special at all",
    "",
)
SEPARATORS = (" ", "\n", ", ", "; ", "\t", "  ")
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def corpus(folder: Path) -> list[str]:
    """The fixed corpus: bench memories of the tiny conversation, the golden examples, mixes."""
    turns = load_corpus(str(tiny.write(folder)))
    texts = [make_memory(turns, seed, i) for seed in (1, 2, 3) for i in range(400)]
    texts += [c for _, c, _ in ORDER_TIMEOUT_EN + ORDER_TIMEOUT_ZH]
    texts += list(FRAGMENTS)
    rng = random.Random(0)
    pool = [*FRAGMENTS, *turns.texts]
    for _ in range(1500):
        parts = rng.sample(pool, rng.randint(1, 4))
        text = rng.choice(SEPARATORS).join(parts)
        texts.append(text.upper() if rng.random() < 0.1 else text)
    return texts


def _digest(rows: Any) -> str:
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


def text_digest(texts: list[str]) -> str:
    """One hash of every text function's output (and both redaction policies') per text."""
    strict = RedactionPolicy.strict()
    rows = []
    for text in texts:
        default, redacted = redact(text), redact(text, strict)
        rows.append([
            derive_cues(text), derive_cues(text, limit=5), content_terms(text), words(text),
            query_units(text), normalize(text), default.text, default.as_dict(),
            redacted.text, redacted.as_dict(),
        ])  # fmt: skip
    return _digest(rows)


def store_digest(folder: Path) -> str:
    """One hash of the records, index keys and top-10 rankings of a store of bench memories."""
    turns = load_corpus(str(tiny.write(folder)))
    store = CueMap(":memory:", clock=lambda: T0)
    items = [memory_item(turns, 5, i) for i in range(600)]
    items += [{"content": f, "metadata": {"password": "x"}} for f in FRAGMENTS if f.strip()]
    records = store.add_many(items)
    seqs = [store._seq_of[(r.namespace, r.memory_id)] for r in records]
    rows: list[Any] = [repr(r) for r in records]
    rows += [repr(store._index_keys(store._records[seq])) for seq in seqs]
    for question in turns.questions:
        hits = store.recall(question, k=10)
        rows.append([(h.memory.memory_id, round(h.score, 9)) for h in hits])
    store.close()
    return _digest(rows)
