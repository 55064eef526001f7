"""``benchmarks/index_bytes.py``: the bench's traced build, broken down by allocation line."""

from __future__ import annotations

from pathlib import Path

from cuemap_integrations.bench.scale import _traced_cuemap_bytes, load_corpus

from . import scripts


def test_the_sites_break_down_the_same_build_and_leave_the_total_alone(tiny_path: Path) -> None:
    corpus = load_corpus(str(tiny_path))
    plain = _traced_cuemap_bytes(corpus, 7, 40)
    broken_down = _traced_cuemap_bytes(corpus, 7, 40, sites=500)
    assert "sites" not in plain
    sites = broken_down["sites"]
    assert sites and all(row["bytes_per_memory"] > 0 for row in sites)
    assert [row["bytes_per_memory"] for row in sites] == sorted(
        (row["bytes_per_memory"] for row in sites), reverse=True
    )
    # every growing line is listed: together they hold the growth (less what was freed)
    assert sum(row["bytes_per_memory"] for row in sites) * 40 >= broken_down["traced_growth_bytes"]
    assert any(row["site"].startswith(("recordtable.py:", "postings.py:")) for row in sites)
    assert len(_traced_cuemap_bytes(corpus, 7, 40, sites=3)["sites"]) == 3


def test_the_command_prints_the_total_and_the_rows_and_writes_the_json(
    tiny_path: Path, tmp_path: Path
) -> None:
    printed, figures = scripts.run(
        "index_bytes", "--size", "30", "--top", "5", "--locomo", str(tiny_path),
        out=tmp_path / "bytes.json",
    )  # fmt: skip
    assert figures["size"] == 30 and len(figures["sites"]) == 5
    lines = printed.splitlines()
    assert f"{figures['index_bytes_per_memory']:.1f}" in lines[0]
    assert [line.split()[-1] for line in lines[2:]] == [row["site"] for row in figures["sites"]]
