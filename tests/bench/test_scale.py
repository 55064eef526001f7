"""``bench scale`` on a tiny corpus: output shape, and the freshly added memory is recallable."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from cuemap_integrations.bench import add_bench_parser
from cuemap_integrations.bench.data import parse_conversations
from cuemap_integrations.bench.scale import (
    ScaleOptions,
    corpus_of,
    counter_word,
    make_memory,
    queries_for,
    run_scale,
)

from . import tiny


def test_counter_words_are_unique() -> None:
    words = [counter_word(i) for i in range(20_000)]
    assert len(set(words)) == len(words)
    assert words[:2] == ["ba", "be"]


def test_memories_are_deterministic_and_varied() -> None:
    corpus = corpus_of(parse_conversations(tiny.sample()))
    first = [make_memory(corpus, 7, i) for i in range(50)]
    assert first == [make_memory(corpus, 7, i) for i in range(50)]
    assert len(set(first)) == 50
    assert first != [make_memory(corpus, 8, i) for i in range(50)]
    assert queries_for(corpus, 7, 12)[:5] == queries_for(corpus, 7, 5)
    assert set(queries_for(corpus, 7, 12)) == {q["question"] for q in tiny.QUESTIONS}


def test_scale_smoke(tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="cuemap")
    add_bench_parser(parser.add_subparsers())
    out = tmp_path / "scale.json"
    args = parser.parse_args(["bench", "scale", "--sizes", "200", "--queries", "20", "--locomo",
                              str(tiny_path), "--json", str(out)])  # fmt: skip
    assert args.func(args) == 0
    report = json.loads(out.read_text())
    [entry] = report["sizes"]
    assert entry["size"] == 200 and "problem" not in entry
    cue, bm = entry["cuemap"], entry["bm25s"]
    assert cue["add"]["visible"] == cue["add"]["checked"] == 50 and cue["add"]["missed"] == []
    assert cue["durable_file"]["add"]["visible"] == 50
    assert cue["durable_file"]["reopened_memories"] == 250
    assert cue["recall_ms"]["n"] == 60 and cue["recall_ms"]["p95"] >= cue["recall_ms"]["p50"] > 0
    assert cue["ingest_per_s"] > 0 and cue["durable_file"]["ingest_per_s"] > 0
    runs = sorted(run["ingest_s"] for run in cue["runs"])  # the default 3, the rate their median's
    assert len(runs) == 3 and cue["ingest_per_s"] == pytest.approx(200 / runs[1])
    assert cue["peak_rss_bytes"] > 0 and cue["memory"]["index_bytes_per_memory"] > 0
    assert bm["rebuild_visible"] == bm["rebuilds"] == 3 and bm["query_ms"]["n"] == 20
    assert set(entry["ratios"]) >= {
        "query_p50_ms",
        "new_memory_searchable_ms",
        "index_bytes_per_memory",
    }
    printed = capsys.readouterr().out
    assert "size 200" in printed and "cuemap/bm25s" in printed and "median of 3" in printed


def test_sizes_beyond_the_budget_are_skipped(tiny_path: Path) -> None:
    options = ScaleOptions(sizes=(100, 10_000_000), queries=5, corpus=str(tiny_path),
                           max_seconds=120, bm25s=False)  # fmt: skip
    report = run_scale(options, progress=None)
    first, second = report["sizes"]
    assert "cuemap" in first and "bm25s" not in first
    assert second["skipped"].startswith("skipped: estimated")


def test_index_bytes_are_measured_in_a_process_of_their_own(monkeypatch, tiny_path: Path) -> None:
    """The memos of the text module are process-wide: after the other figures' ingests they
    would already hold the corpus's words, so the bytes get a fresh process (job) each."""
    from cuemap_integrations.bench import scale

    jobs: list[str] = []

    def run_job(job: dict, timeout: float) -> dict:
        jobs.append(job["system"])
        return {"ok": {"index_bytes_per_memory": 1.0} if job["system"] == "cuemap-bytes"
                else {"from": job["system"], "ingest_s": 2.0, "recall_s": [0.001]}}  # fmt: skip

    monkeypatch.setattr(scale, "run_job", run_job)
    options = ScaleOptions(corpus=str(tiny_path), bm25s=False, runs=1)  # no ratios
    entry = scale._measure_size(options, 100, 60.0)
    assert jobs == ["cuemap", "cuemap-bytes"]
    cue = entry["cuemap"]
    assert cue["from"] == "cuemap" and cue["memory"] == {"index_bytes_per_memory": 1.0}
    assert cue["runs"] == [{"ingest_s": 2.0, "recall_p50_ms": 1.0}] and "recall_s" not in cue


def test_in_memory_figures_pool_runs_in_fresh_processes(
    monkeypatch: pytest.MonkeyPatch, tiny_path: Path
) -> None:
    """Each further in-memory run is a job (a fresh process, cold memos as the first's): the
    reported ingest is the runs' median, the recall percentiles are over every run's recalls,
    and each run's own figures are kept."""
    from cuemap_integrations.bench import scale

    jobs: list[str] = []
    results = iter([(4.0, [0.001, 0.009]), (1.0, [0.002, 0.003]), (2.5, [0.004, 0.005])])

    def run_job(job: dict, timeout: float) -> dict:
        jobs.append(job["system"])
        if job["system"] == "cuemap-bytes":
            return {"ok": {"index_bytes_per_memory": 1.0}}
        seconds, recalls = next(results)
        return {"ok": {"ingest_s": seconds, "ingest_per_s": 0.0, "recall_s": recalls}}

    monkeypatch.setattr(scale, "run_job", run_job)
    options = ScaleOptions(corpus=str(tiny_path), bm25s=False, runs=3)
    cue = scale._measure_size(options, 100, 60.0)["cuemap"]
    assert jobs == ["cuemap", "cuemap-again", "cuemap-again", "cuemap-bytes"]
    assert [run["ingest_s"] for run in cue["runs"]] == [4.0, 1.0, 2.5]
    assert [run["recall_p50_ms"] for run in cue["runs"]] == pytest.approx([5.0, 2.5, 4.5])
    assert cue["ingest_s"] == 2.5 and cue["ingest_per_s"] == 40.0
    # pooled: the median of all six recalls (not of the runs' p50s, 4.5)
    assert cue["recall_ms"]["n"] == 6 and cue["recall_ms"]["p50"] == pytest.approx(3.5)
