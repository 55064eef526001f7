"""``cuemap bench soak``: a few seconds of each phase, figures as JSON and a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuemap_integrations.bench import main
from cuemap_integrations.bench.soak import SoakReport, format_soak


def test_a_short_soak_reports_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "soak.json"
    argv = ["soak", "--seconds", "4", "--threads", "2", "--processes", "1", "--kills", "2",
            "--inputs", "60", "--dir", str(tmp_path), "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["ok"] is True and report["memories_lost"] == 0 and report["problems"] == []
    # the crash phase is time-boxed: on a loaded machine one kill may be all that fits
    assert 1 <= report["kills"] == report["kills_survived"] <= 2
    assert report["inputs_tried"] == 60
    assert report["operations_held"] > 0 and report["recall_hits_verified"] > 0
    assert report["crash_writes_acknowledged"] >= report["kills"]
    table = capsys.readouterr().out
    assert "memories lost" in table and table.rstrip().endswith("ok")
    assert [p.name for p in tmp_path.iterdir()] == ["soak.json"]  # temporary stores removed


def test_a_loss_fails_the_run() -> None:
    report = SoakReport(options={}, memories_lost=1, problems=["k0-3: acknowledged ..."])
    assert not report.ok
    assert format_soak(report).splitlines()[-2:] == ["FAILED", "k0-3: acknowledged ..."]
