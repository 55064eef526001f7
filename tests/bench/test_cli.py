"""``bench locomo`` through add_bench_parser, as the main CLI will call it."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cuemap_integrations.bench import add_bench_parser, build_parser, main
from cuemap_integrations.bench.systems import BenchError, parse_system_names

SYSTEMS = ["cuemap", "cuemap-session", "bm25s"]


def cli_main(argv: list[str]) -> int:
    """A throwaway ``cuemap``-like parser with the bench commands wired in."""
    parser = argparse.ArgumentParser(prog="cuemap")
    subparsers = parser.add_subparsers(dest="command")
    add_bench_parser(subparsers)
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_locomo_json_shape(
    tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results" / "tiny.json"
    argv = ["bench", "locomo", str(tiny_path), "--systems", ",".join(SYSTEMS), "--k", "1,5",
            "--json", str(out), "--per-question"]  # fmt: skip
    assert cli_main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report) >= {
        "benchmark",
        "config",
        "date",
        "machine",
        "code",
        "tokens",
        "evidence",
        "systems",
    }
    assert len(report["code"]["core_sha256"]) == 64
    assert report["config"]["ks"] == [1, 5] and report["config"]["conversations"] == ["tiny-1"]
    assert report["machine"]["python"] == sys.version.split()[0]
    assert list(report["systems"]) == SYSTEMS
    for res in report["systems"].values():
        assert set(res["overall"]) == {"n", "R@1", "R@5", "H@1", "H@5", "W@1", "W@5", "MRR"}
        assert res["overall"]["n"] == 4
        assert list(res["by_category"]) == ["1", "2", "3", "4"]
        assert res["with_adversarial"]["n"] == 5 and set(res["with_adversarial"]["W"]) == {"1", "5"}
        assert set(res["tokens_mean"]) == {"1", "5"}
        assert res["latency_ms"]["n"] == 5 and res["latency_ms"]["p95"] >= res["latency_ms"]["p50"]
        assert len(res["per_question"]) == 5
        assert all(0.0 <= v <= 1.0 for k, v in res["overall"].items() if k != "n")
    assert report["evidence"]["problem_counts"] == {"split": 1, "unparseable": 0, "missing_turn": 1,
                                                    "duplicate": 0}  # fmt: skip
    assert report["evidence"]["scored_strict"] == 4
    printed = capsys.readouterr().out
    assert "R@10" not in printed and "R@5 by category" in printed and "cuemap-session" in printed
    assert "missing_turn: 'D2:9'" in printed and "split: 'D1:2; D1:3'" in printed


def test_cuemap_finds_the_obvious_turn(tiny_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["locomo", str(tiny_path), "--systems", "cuemap", "--k", "3", "--json", str(out),
                 "--per-question"]) == 0  # fmt: skip
    [first, *_] = json.loads(out.read_text())["systems"]["cuemap"]["per_question"]
    assert "D1:3" in first["ranking"]  # "What breed is Ana's puppy Biscuit?"


def test_json_is_deterministic_apart_from_timings(tiny_path: Path, tmp_path: Path) -> None:
    def run(name: str) -> dict:
        out = tmp_path / name
        assert main(["locomo", str(tiny_path), "--systems", "cuemap,cuemap-session,bm25s",
                     "--json", str(out), "--per-question"]) == 0  # fmt: skip
        report = json.loads(out.read_text())
        for key in ("date",):
            report.pop(key)
        for res in report["systems"].values():
            res.pop("latency_ms"), res.pop("build_seconds")
        return report

    assert run("a.json") == run("b.json")


def test_unknown_system_lists_valid_names(
    tiny_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["bench", "locomo", str(tiny_path), "--systems", "cuemap,elastic"]) == 1
    err = capsys.readouterr().err
    assert "unknown system 'elastic'" in err and "cuemap, cuemap-session, bm25s, dense" in err
    with pytest.raises(BenchError):
        parse_system_names(" , ")


def test_unknown_conversation_and_missing_file(
    tiny_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["locomo", str(tiny_path), "--systems", "cuemap", "--conversations", "conv-99"]) == 1
    )
    assert "conv-99" in capsys.readouterr().err
    assert main(["locomo", str(tiny_path.with_name("absent.json")), "--systems", "cuemap"]) == 1
    assert "absent.json" in capsys.readouterr().err


def test_bad_k_is_a_usage_error(tiny_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["locomo", str(tiny_path), "--k", "0,5"])
    assert exit_info.value.code == 2


def test_help_has_examples() -> None:
    parser = argparse.ArgumentParser(prog="cuemap")
    add_bench_parser(parser.add_subparsers())
    for argv in (["bench", "locomo", "--help"], ["bench", "scale", "--help"]):
        text = subprocess.run(
            [sys.executable, "-m", "cuemap_integrations.bench", *argv[1:]],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "Example:" in text and "\n  cuemap bench" in text
    assert build_parser().prog == "python -m cuemap_integrations.bench"


def test_bench_without_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["bench"])
    assert exit_info.value.code == 2


def test_import_is_standard_library_only() -> None:
    code = (
        "import sys, json; before = set(sys.modules); import cuemap_integrations.bench, "
        "cuemap_integrations.bench.locomo, cuemap_integrations.bench.scale, "
        "cuemap_integrations.bench.baselines, cuemap_integrations.bench.cli; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    foreign = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names
               and m.split(".")[0] != "cuemap_integrations"]  # fmt: skip
    assert foreign == []
