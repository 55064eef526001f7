"""``cuemap bench scale``: ingest, add and recall cost of CueMap as it grows, against bm25s.

Memories come from a real text corpus, the turns of a LoCoMo-format file, varied so that no two are
alike (:func:`make_memory`): memory ``i`` is a random turn with a random speaker name, half of
another random turn, and a made-up counter word unique to ``i``. The random choices come from
``random.Random(f"{seed}:{i}")``, so memory ``i`` is the same in every run and every process.
Queries are the file's questions, shuffled with the seed and repeated up to ``--queries``.

Each (size, system) is measured in a fresh process (``multiprocessing`` spawn), so the peak RSS
(``resource.getrusage``) is that system's alone. Per size, CueMap:

* bulk ingest throughput into ``CueMap(":memory:")`` and into a SQLite file with durable commits
  (``synchronous=FULL``), ``add_many`` in batches of 10,000;
* ``add`` latency: the median over 50 single adds (in memory, and into the durable file), each
  followed by ``recall(content, k=10)`` that must return the new memory (checked, counted);
* recall p50/p95 at k=10;
* the in-memory ingest and the recalls are run ``runs`` times (``--runs``), each in a fresh
  process (cold memos and caches, as the first): the ingest figure is the runs' median, the
  recall percentiles are over every run's recalls (each asks every query once), and each run's
  own ingest seconds and recall p50 are in the report (``runs``): a shared machine moves one
  run by tens of percent (the same 10,000-memory ingest read 343-544 ms of CPU within minutes);
* index bytes per memory beyond its text: with ``tracemalloc`` on, memories are generated and added
  batch by batch (each batch list dropped after ``add_many``); the traced growth minus
  ``sys.getsizeof`` of every content string, divided by the size. SQLite's own pages are allocated
  outside Python and are not traced (they are in the RSS).

bm25s: index build time (tokenize + index), query p50/p95 at k=10, the cost of making one new
memory searchable (a full rebuild over size + 1 texts, checked by a search), peak RSS and traced
index bytes per memory (its texts are not kept by the index, so nothing is subtracted).
"""

from __future__ import annotations

import gc
import random
import resource
import statistics
import sys
import tempfile
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .data import Conversation, load_locomo
from .metrics import percentile
from .report import code_info, fmt, format_table, machine_info
from .systems import BenchError

__all__ = ["Corpus", "ScaleOptions", "format_scale", "load_corpus", "make_memory", "run_scale"]

BATCH = 10_000
ADDS = 50
K = 10
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


@dataclass(frozen=True)
class ScaleOptions:
    """What to run (the CLI's options)."""

    sizes: tuple[int, ...] = (1000, 10_000, 100_000, 1_000_000)
    queries: int = 200
    corpus: str = "../shared/locomo_dev.json"
    max_seconds: float = 1200.0
    seed: int = 7
    bm25s: bool = True
    runs: int = 3  # in-memory runs (ingest, recalls), each in a fresh process: pooled


@dataclass(frozen=True)
class Corpus:
    """Turn texts, speaker names and questions taken from a LoCoMo-format file."""

    texts: tuple[str, ...]
    speakers: tuple[str, ...]
    questions: tuple[str, ...]


def load_corpus(path: str) -> Corpus:
    """The corpus of ``path`` (turn texts with captions, speaker names, question texts)."""
    conversations = load_locomo(path)
    return corpus_of(conversations)


def corpus_of(conversations: Sequence[Conversation]) -> Corpus:
    """The corpus of already parsed conversations."""
    texts = [_turn_text(t.text, t.blip_caption) for c in conversations for t in c.turns]
    speakers = sorted({t.speaker for c in conversations for t in c.turns if t.speaker})
    questions = [q.text for c in conversations for q in c.questions if q.text.strip()]
    if not texts or not questions:
        raise BenchError("the corpus file needs dialogue turns and questions")
    return Corpus(tuple(texts), tuple(speakers or ["Speaker"]), tuple(questions))


def _turn_text(text: str, caption: str | None) -> str:
    return f"{text} [shares an image: {caption}]" if caption else text


def counter_word(i: int) -> str:
    """A pronounceable word unique to ``i`` (bijective base-70 syllables): 0 -> "ba"."""
    word = []
    i += 1
    while i:
        i, digit = divmod(i - 1, len(_SYLLABLES))
        word.append(_SYLLABLES[digit])
    return "".join(reversed(word))


def make_memory(corpus: Corpus, seed: int, i: int) -> str:
    """Memory ``i``: a turn, another speaker, half of another turn, and a unique counter word."""
    rng = random.Random(f"{seed}:{i}")
    base = corpus.texts[rng.randrange(len(corpus.texts))]
    words = corpus.texts[rng.randrange(len(corpus.texts))].split()
    half = words[: len(words) // 2] if rng.random() < 0.5 else words[len(words) // 2 :]
    speaker = corpus.speakers[rng.randrange(len(corpus.speakers))]
    return " ".join(
        part for part in (f"{speaker}: {base}", " ".join(half), counter_word(i)) if part
    )


def memory_item(corpus: Corpus, seed: int, i: int) -> dict[str, Any]:
    """The ``add_many`` item of memory ``i`` (no hand-made cues)."""
    return {"content": make_memory(corpus, seed, i), "memory_id": f"m{i}",
            "created_at": T0 + timedelta(minutes=i), "type": "event", "source": "scale",
            "metadata": {"i": i}}  # fmt: skip


def batches(corpus: Corpus, seed: int, start: int, stop: int) -> Iterator[list[dict[str, Any]]]:
    """Items ``start..stop-1`` in lists of at most :data:`BATCH`."""
    for low in range(start, stop, BATCH):
        yield [memory_item(corpus, seed, i) for i in range(low, min(low + BATCH, stop))]


def queries_for(corpus: Corpus, seed: int, n: int) -> list[str]:
    """``n`` question texts: the corpus's questions shuffled with ``seed``, repeated as needed."""
    order = list(corpus.questions)
    random.Random(seed).shuffle(order)
    return [order[i % len(order)] for i in range(n)]


def _ms(seconds: Sequence[float]) -> dict[str, float | None]:
    millis = [s * 1000.0 for s in seconds]
    return {"p50": percentile(millis, 50), "p95": percentile(millis, 95), "n": len(millis)}


def _peak_rss_bytes() -> int:
    """Peak resident set size of this process (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """Seconds taken by ``call(*args, **kwargs)`` and its value."""
    t0 = time.perf_counter()
    value = call(*args, **kwargs)
    return time.perf_counter() - t0, value


# ---------------------------------------------------------------------------- CueMap
def _fixed_clock() -> datetime:
    return T0 + timedelta(days=400)


def _ingest(store: Any, corpus: Corpus, seed: int, size: int) -> float:
    """Seconds to ``add_many`` memories 0..size-1 in batches (generation not timed)."""
    total = 0.0
    for batch in batches(corpus, seed, 0, size):
        total += _timed(store.add_many, batch)[0]
    return total


def _adds(store: Any, corpus: Corpus, seed: int, first: int) -> dict[str, Any]:
    """50 single adds, each followed by a recall of its content that must return it."""
    add_s, recall_s, missed = [], [], []
    for i in range(first, first + ADDS):
        item = memory_item(corpus, seed, i)
        content = item.pop("content")
        add_s.append(_timed(store.add, content, **item)[0])
        seconds, hits = _timed(store.recall, content, k=K)
        recall_s.append(seconds)
        if item["memory_id"] not in [h.memory_id for h in hits]:
            missed.append(item["memory_id"])
    return {"add_ms": _ms(add_s), "recall_after_add_ms": _ms(recall_s), "checked": ADDS,
            "visible": ADDS - len(missed), "missed": missed}  # fmt: skip


def _traced_cuemap_bytes(corpus: Corpus, seed: int, size: int, sites: int = 0) -> dict[str, Any]:
    """tracemalloc growth of building an in-memory store, beyond the contents' own str size.

    With ``sites`` > 0 the result also holds the ``sites`` allocation lines (``file:line``, the
    innermost frame) that grew most, as ``{"site", "bytes_per_memory", "blocks_per_memory"}``:
    the figure's breakdown, from the same build (``benchmarks/index_bytes.py`` prints it).
    """
    from ..core import CueMap

    gc.collect()
    tracemalloc.start()
    first = tracemalloc.take_snapshot() if sites else None
    before = tracemalloc.get_traced_memory()[0]
    store = CueMap(":memory:", clock=_fixed_clock)
    text_str = text_utf8 = 0
    for batch in batches(corpus, seed, 0, size):
        text_str += sum(sys.getsizeof(item["content"]) for item in batch)
        text_utf8 += sum(len(item["content"].encode("utf-8")) for item in batch)
        store.add_many(batch)
        del batch
    gc.collect()
    growth = tracemalloc.get_traced_memory()[0] - before
    grown = _grown_sites(first, tracemalloc.take_snapshot(), size, sites) if first else None
    tracemalloc.stop()
    store.close()
    figures = {"traced_growth_bytes": growth, "content_str_bytes": text_str,
               "content_utf8_bytes": text_utf8,
               "index_bytes_per_memory": (growth - text_str) / size}  # fmt: skip
    return figures if grown is None else {**figures, "sites": grown}


def _grown_sites(
    first: tracemalloc.Snapshot, last: tracemalloc.Snapshot, size: int, top: int
) -> list[dict[str, Any]]:
    """The ``top`` allocation lines that grew most from ``first`` to ``last``, per memory."""
    own = [tracemalloc.Filter(False, tracemalloc.__file__)]  # not the snapshots' own blocks
    grew = [d for d in last.filter_traces(own).compare_to(first.filter_traces(own), "lineno")
            if d.size_diff > 0]  # fmt: skip
    grew.sort(key=lambda d: (-d.size_diff, str(d.traceback)))
    return [
        {"site": f"{Path(d.traceback[0].filename).name}:{d.traceback[0].lineno}",
         "bytes_per_memory": d.size_diff / size, "blocks_per_memory": d.count_diff / size}
        for d in grew[:top]
    ]  # fmt: skip


def _durable_file(corpus: Corpus, seed: int, size: int) -> dict[str, Any]:
    """Bulk ingest into a durable SQLite file, single adds into it, and reopening it."""
    from ..core import CueMap

    with tempfile.TemporaryDirectory(prefix="cuemap-scale-") as folder:
        path = Path(folder) / "scale.db"
        store = CueMap(path, clock=_fixed_clock, durable=True)
        seconds = _ingest(store, corpus, seed, size)
        adds = _adds(store, corpus, seed, size + ADDS)
        store.close()
        file_bytes = sum(p.stat().st_size for p in Path(folder).iterdir())
        reopen_s, reopened = _timed(CueMap, path, clock=_fixed_clock)
        count = len(reopened)
        reopened.close()
    return {"ingest_s": seconds, "ingest_per_s": size / seconds if seconds else None,
            "add": adds, "file_bytes_per_memory": file_bytes / size, "reopen_s": reopen_s,
            "reopened_memories": count}  # fmt: skip


def _in_memory(corpus: Corpus, seed: int, size: int, queries: Sequence[str]) -> dict[str, Any]:
    """Bulk ingest, recalls and single adds on ``CueMap(":memory:")``, and the peak RSS."""
    from ..core import CueMap

    rss_before = _peak_rss_bytes()
    store = CueMap(":memory:", clock=_fixed_clock)
    ingest = _ingest(store, corpus, seed, size)
    recall_s = [_timed(store.recall, q, k=K)[0] for q in queries]
    adds = _adds(store, corpus, seed, size)
    peak = _peak_rss_bytes()
    store.close()
    return {
        "ingest_s": ingest,
        "ingest_per_s": size / ingest if ingest else None,
        "recall_ms": _ms(recall_s),
        "recall_s": recall_s,  # pooled with the other runs' (then dropped: _pooled)
        "add": adds,
        "peak_rss_bytes": peak,
        "rss_before_bytes": rss_before,
    }


def measure_cuemap(corpus: Corpus, seed: int, size: int, queries: Sequence[str]) -> dict[str, Any]:
    """Every CueMap figure of one size (run in a fresh process for a clean peak RSS)."""
    result = _in_memory(corpus, seed, size, queries)
    gc.collect()
    result["durable_file"] = _durable_file(corpus, seed, size)
    return result


def measure_cuemap_again(
    corpus: Corpus, seed: int, size: int, queries: Sequence[str]
) -> dict[str, Any]:
    """Another run of the in-memory bulk ingest and recalls, in a process of its own (cold
    memos, as the first run's): pooled with it (:func:`_pooled`)."""
    from ..core import CueMap

    store = CueMap(":memory:", clock=_fixed_clock)
    seconds = _ingest(store, corpus, seed, size)
    recall_s = [_timed(store.recall, q, k=K)[0] for q in queries]
    store.close()
    return {"ingest_s": seconds, "recall_s": recall_s}


def measure_cuemap_bytes(
    corpus: Corpus, seed: int, size: int, queries: Sequence[str]
) -> dict[str, Any]:
    """The index bytes of one size, in a process of their own (its ``memory`` figures).

    The text module's per-word memos are process-wide. Measured after the other figures'
    ingests of the same memories, they already held the corpus's words, whose strings the
    traced store then did not pay for (stop 20 found it: 844 bytes per memory at 100k that
    way, about 960 from a fresh process); a fresh process counts what a first store costs."""
    del queries  # the same signature as the other measures
    return _traced_cuemap_bytes(corpus, seed, size)


# ---------------------------------------------------------------------------- bm25s
def _rebuild_once(texts: list[str], new_text: str) -> tuple[float, bool]:
    from .baselines import BM25Index

    seconds, index = _timed(BM25Index, [*texts, new_text])
    return seconds, len(texts) in index.search(new_text, K)


def _traced_bm25_bytes(texts: list[str]) -> dict[str, Any]:
    """tracemalloc growth of building a bm25s index (numpy arrays are traced; texts exist before)."""
    from .baselines import BM25Index

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    built = BM25Index(texts)
    growth = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del built  # alive until measured
    return {"traced_growth_bytes": growth, "index_bytes_per_memory": growth / len(texts)}


def measure_bm25s(corpus: Corpus, seed: int, size: int, queries: Sequence[str]) -> dict[str, Any]:
    """Every bm25s figure of one size (run in a fresh process for a clean peak RSS)."""
    from .baselines import BM25Index

    texts = [make_memory(corpus, seed, i) for i in range(size)]
    rss_before = _peak_rss_bytes()
    build_s, index = _timed(BM25Index, texts)
    query_s = [_timed(index.search, q, K)[0] for q in queries]
    peak = _peak_rss_bytes()
    del index
    rebuilds = [
        _rebuild_once(texts, make_memory(corpus, seed, size + j))
        for j in range(3 if size <= 20_000 else 1)
    ]
    return {
        "build_s": build_s,
        "build_per_s": size / build_s if build_s else None,
        "query_ms": _ms(query_s),
        "rebuild_ms": _ms([s for s, _ in rebuilds]),
        "rebuild_visible": sum(ok for _, ok in rebuilds),
        "rebuilds": len(rebuilds),
        "peak_rss_bytes": peak,
        "rss_before_bytes": rss_before,
        "memory": _traced_bm25_bytes(texts),
    }


# ---------------------------------------------------------------------------- processes
def _worker(connection: Any, job: dict[str, Any]) -> None:
    """Child process entry: measure one (system, size) and send the result (or the error)."""
    try:
        corpus = load_corpus(job["corpus"])
        queries = queries_for(corpus, job["seed"], job["queries"])
        measure = _MEASURES[job["system"]]
        connection.send({"ok": measure(corpus, job["seed"], job["size"], queries)})
    except BaseException:  # report anything to the parent; it decides
        connection.send({"error": traceback.format_exc()})
    finally:
        connection.close()


_MEASURES = {"cuemap": measure_cuemap, "cuemap-again": measure_cuemap_again,
             "cuemap-bytes": measure_cuemap_bytes, "bm25s": measure_bm25s}  # fmt: skip


def run_job(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run :func:`_worker` in a fresh spawned process; ``{"timeout": s}`` if it runs too long."""
    import multiprocessing  # here: importing it registers ``__mp_main__`` in sys.modules

    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(sender, job), daemon=True)
    process.start()
    sender.close()
    try:
        if receiver.poll(max(timeout, 0.0)):
            result: dict[str, Any] = receiver.recv()
        else:
            process.terminate()
            result = {"timeout": timeout}
    except EOFError:
        result = {"error": f"worker exited with status {process.exitcode} (out of memory?)"}
    finally:
        receiver.close()
        process.join()
        process.close()
    return result


def _estimate(history: list[tuple[int, float]], size: int) -> float:
    """Expected seconds for ``size``: the last size's time scaled linearly, plus 20 %."""
    if not history:
        return 0.0
    last_size, last_seconds = history[-1]
    return last_seconds * size / last_size * 1.2


def _measure_size(options: ScaleOptions, size: int, remaining: float) -> dict[str, Any]:
    entry: dict[str, Any] = {"size": size}
    runs: list[dict[str, Any]] = []  # CueMap's in-memory runs
    more = ["cuemap-again"] * (options.runs - 1)
    systems = ["cuemap", *more, "cuemap-bytes", *(["bm25s"] if options.bm25s else [])]
    started = time.perf_counter()
    for system in systems:
        job = {"system": system, "size": size, "corpus": options.corpus, "seed": options.seed,
               "queries": options.queries}  # fmt: skip
        result = run_job(job, remaining - (time.perf_counter() - started))
        if "ok" not in result:
            entry["problem"] = f"{system}: " + (
                f"stopped after {result['timeout']:.0f} s (time budget)" if "timeout" in result
                else result["error"])  # fmt: skip
            break
        if system == "cuemap-bytes":  # reported with cuemap's other figures
            entry["cuemap"]["memory"] = result["ok"]
        elif system == "cuemap-again":
            runs.append(result["ok"])
        else:
            entry[system] = result["ok"]
            if system == "cuemap":  # its figures, before _pooled replaces them
                runs.append({key: result["ok"][key] for key in ("ingest_s", "recall_s")})
    if "cuemap" in entry:
        _pooled(entry["cuemap"], runs, size)
    entry["elapsed_s"] = time.perf_counter() - started
    if "cuemap" in entry and "bm25s" in entry:
        entry["ratios"] = ratios(entry["cuemap"], entry["bm25s"])
    return entry


def _pooled(cue: dict[str, Any], runs: list[dict[str, Any]], size: int) -> None:
    """CueMap's in-memory figures over the runs made (fewer than asked if the time budget ran
    out): the median ingest, the recall percentiles over every run's recalls, and each run's
    own ingest seconds and recall p50 in ``cue["runs"]``."""
    seconds = statistics.median(run["ingest_s"] for run in runs)
    cue["ingest_s"], cue["ingest_per_s"] = seconds, size / seconds if seconds else None
    cue["recall_ms"] = _ms([s for run in runs for s in run["recall_s"]])
    cue["runs"] = [{"ingest_s": run["ingest_s"], "recall_p50_ms": _ms(run["recall_s"])["p50"]}
                   for run in runs]  # fmt: skip
    cue.pop("recall_s", None)


def ratios(cue: dict[str, Any], bm: dict[str, Any]) -> dict[str, float | None]:
    """cuemap / bm25s for the medians and sizes that compare like with like."""

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    return {
        "ingest_vs_build_s": ratio(cue["ingest_s"], bm["build_s"]),
        "new_memory_searchable_ms": ratio(cue["add"]["add_ms"]["p50"], bm["rebuild_ms"]["p50"]),
        "query_p50_ms": ratio(cue["recall_ms"]["p50"], bm["query_ms"]["p50"]),
        "query_p95_ms": ratio(cue["recall_ms"]["p95"], bm["query_ms"]["p95"]),
        "peak_rss_bytes": ratio(cue["peak_rss_bytes"], bm["peak_rss_bytes"]),
        "index_bytes_per_memory": ratio(cue["memory"]["index_bytes_per_memory"],
                                        bm["memory"]["index_bytes_per_memory"]),
    }  # fmt: skip


def run_scale(options: ScaleOptions, *, progress: Any = sys.stderr) -> dict[str, Any]:
    """Measure every size that fits in the time budget; return the report.

    Raises:
        BenchError: the corpus cannot be read, or bm25s is asked for but not installed.
        OSError: the corpus file cannot be read.
    """
    corpus = load_corpus(options.corpus)  # fail early, in this process, on a bad file
    if options.bm25s:
        from .baselines import require

        require("bm25s", ["bm25s", "Stemmer", "numpy"])
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.perf_counter()
    history: list[tuple[int, float]] = []
    entries = []
    for size in options.sizes:
        remaining = options.max_seconds - (time.perf_counter() - started)
        estimate = _estimate(history, size)
        if estimate > remaining or remaining <= 0:
            note = f"skipped: estimated {estimate:.0f} s, {max(remaining, 0):.0f} s left of --max-seconds"
            _say(progress, f"bench scale: size {size:,} {note}")
            entries.append({"size": size, "skipped": note})
            continue
        entry = _measure_size(options, size, remaining)
        entries.append(entry)
        history.append((size, entry["elapsed_s"]))
        _say(progress, f"bench scale: size {size:,} done in {entry['elapsed_s']:.1f} s")
    return {
        "benchmark": "scale",
        "config": {**asdict(options), "sizes": list(options.sizes), "batch": BATCH, "adds": ADDS,
                   "k": K, "corpus_turns": len(corpus.texts), "corpus_questions": len(corpus.questions)},
        "date": started_at,
        "machine": machine_info(),
        "code": code_info(),
        "sizes": entries,
    }  # fmt: skip


def _say(stream: Any, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)


# ---------------------------------------------------------------------------- report
def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _size_rows(entry: dict[str, Any]) -> list[list[str]]:
    c, b, r = entry["cuemap"], entry.get("bm25s"), entry.get("ratios") or {}
    d = c["durable_file"]

    def row(label: str, cue: str, bm: str = "-", key: str | None = None) -> list[str]:
        value = r.get(key) if key else None
        return [label, cue, bm, "" if value is None else f"{value:.3g}"]

    runs = len(c.get("runs", [c]))
    return [
        row(f"ingest memories/s (in memory, median of {runs} | bm25s build)",
            _rate(c["ingest_per_s"]), _rate(b["build_per_s"]) if b else "-"),
        row("ingest s (in memory | bm25s build)", fmt(c["ingest_s"], 2), fmt(b["build_s"], 2) if b else "-",
            "ingest_vs_build_s"),
        row("ingest memories/s (SQLite file, durable)", _rate(d["ingest_per_s"])),
        row("new memory searchable ms (add p50 | rebuild)", fmt(c["add"]["add_ms"]["p50"], 3),
            fmt(b["rebuild_ms"]["p50"], 1) if b else "-", "new_memory_searchable_ms"),
        row("add p50 ms (SQLite file, durable)", fmt(d["add"]["add_ms"]["p50"], 3)),
        row("added memory recalled (of 50; file store)", f"{c['add']['visible']}; {d['add']['visible']}",
            f"{b['rebuild_visible']} of {b['rebuilds']}" if b else "-"),
        row(f"recall p50 ms (k=10, {runs} runs pooled)", fmt(c["recall_ms"]["p50"], 3), fmt(b["query_ms"]["p50"], 3) if b else "-",
            "query_p50_ms"),
        row("recall p95 ms (k=10)", fmt(c["recall_ms"]["p95"], 3), fmt(b["query_ms"]["p95"], 3) if b else "-",
            "query_p95_ms"),
        row("peak RSS MiB", _mib(c["peak_rss_bytes"]), _mib(b["peak_rss_bytes"]) if b else "-",
            "peak_rss_bytes"),
        row("index bytes per memory beyond text", _rate(c["memory"]["index_bytes_per_memory"]),
            _rate(b["memory"]["index_bytes_per_memory"]) if b else "-", "index_bytes_per_memory"),
        row("SQLite file bytes per memory", _rate(d["file_bytes_per_memory"])),
        row("reopen file s", fmt(d["reopen_s"], 2)),
    ]  # fmt: skip


def format_scale(report: dict[str, Any]) -> str:
    """The readable report printed by ``cuemap bench scale``."""
    cfg = report["config"]
    lines = [f"Scale: corpus {cfg['corpus']} ({cfg['corpus_turns']} turns varied, seed {cfg['seed']}), "
             f"{cfg['queries']} queries per size; core {report['code']['version']} "
             f"sha256 {report['code']['core_sha256'][:12]}"]  # fmt: skip
    for entry in report["sizes"]:
        lines.append("")
        if "skipped" in entry:
            lines.append(f"size {entry['size']:,}: {entry['skipped']}")
            continue
        lines.append(f"size {entry['size']:,} (measured in {entry['elapsed_s']:.1f} s)")
        if "cuemap" in entry:
            headers = ["metric", "cuemap", "bm25s", "cuemap/bm25s"]
            lines.append(format_table(headers, _size_rows(entry)))
        if "problem" in entry:
            lines.append(f"problem: {entry['problem']}")
    return "\n".join(lines)
