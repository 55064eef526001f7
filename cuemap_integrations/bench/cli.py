"""Handlers of ``cuemap bench locomo`` and ``cuemap bench scale``: options in, report out."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from .report import print_report, write_json
from .systems import BenchError, parse_system_names
from .tokens import TokenCounter

__all__ = ["run_locomo_command", "run_scale_command", "run_soak_command"]


def _token_counter(path: str | None) -> TokenCounter:
    try:
        return TokenCounter.cl100k(path)
    except ValueError as exc:  # a given file that is missing or is not cl100k_base
        raise BenchError(str(exc)) from None


def run_locomo_command(args: argparse.Namespace) -> int:
    """Run the LoCoMo benchmark, print its tables, write ``--json``; 0 on success."""
    from .locomo import LocomoOptions, run_locomo
    from .report import format_locomo

    options = LocomoOptions(
        path=args.file,
        ks=tuple(args.k),
        systems=tuple(parse_system_names(args.systems)),
        conversations=tuple(args.conversations),
        budget_tokens=args.budget_tokens,
        depth=args.depth or 0,
        tiktoken_file=args.tiktoken_file,
        dense_model=args.dense_model,
        per_question=args.per_question,
    )
    report = run_locomo(options, counter=_token_counter(args.tiktoken_file))
    _emit(format_locomo(report), args.json, report)
    return 0


def run_scale_command(args: argparse.Namespace) -> int:
    """Run the scale benchmark, print its table, write ``--json``; 0 on success."""
    from .scale import ScaleOptions, format_scale, run_scale

    options = ScaleOptions(
        sizes=tuple(args.sizes),
        queries=args.queries,
        corpus=args.locomo,
        max_seconds=args.max_seconds,
        seed=args.seed,
        bm25s=args.bm25s,
        runs=args.runs,
    )
    report = run_scale(options)
    _emit(format_scale(report), args.json, report)
    return 0


def run_soak_command(args: argparse.Namespace) -> int:
    """Run the soak, print its table, write ``--json``; 0 when nothing was lost or found."""
    from .soak import SoakOptions, format_soak, run_soak

    options = SoakOptions(
        seconds=args.seconds,
        threads=args.threads,
        processes=args.processes,
        kills=args.kills,
        inputs=args.inputs,
        seed=args.seed,
        directory=args.dir,
    )
    report = run_soak(options)
    _emit(format_soak(report), args.json, report.as_dict())
    return 0 if report.ok else 1


def _emit(table: str, json_path: str | None, data: Mapping[str, Any]) -> None:
    """Print the table; write the JSON report when asked (and say where, on stderr)."""
    print_report(table)
    if json_path:
        print(f"wrote {write_json(json_path, data)}", file=sys.stderr)
