"""Benchmarks: LoCoMo retrieval quality against bm25s and dense baselines, scale, reliability.

``cuemap bench locomo FILE``, ``cuemap bench scale`` and ``cuemap bench soak`` (wired in by the
main CLI through :func:`add_bench_parser`), or ``python -m cuemap_integrations.bench locomo FILE``. Importing this
package loads the standard library only; bm25s, numpy, FAISS, sentence-transformers and tiktoken
are imported by the benchmark that uses them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .locomo import DEFAULT_SYSTEMS

__all__ = ["add_bench_parser", "build_parser", "main"]

_LOCOMO_EPILOG = """\
Every turn of a conversation is one memory; every question of categories 1-4 with evidence
is scored (R@k, H@k, W@k, MRR), W@k also over categories 1-5. Systems: cuemap,
cuemap-session, bm25s (extra [bench]), dense (MiniLM + FAISS, extra [hybrid]), cuemap-hybrid
(dense fallback), cuemap-fuse (rank fusion of rules and dense), bm25s+dense-rrf.

Example:
  cuemap bench locomo ../shared/locomo_dev.json --k 1,5,10,20 \\
      --systems cuemap,cuemap-session,bm25s,dense --json benchmarks/results/locomo_dev.json
"""

_SCALE_EPILOG = """\
Memories are LoCoMo turns varied deterministically (seeded); queries are its questions.
Per size: bulk ingest (in memory and into a durable SQLite file), add-then-recall latency,
recall p50/p95 at k=10, peak RSS, index bytes per memory, and the same for bm25s.
Sizes that would not finish within --max-seconds are skipped with a note.

Example:
  cuemap bench scale --sizes 1000,10000 --queries 200 --json benchmarks/results/scale.json
"""


def _int_list(text: str) -> tuple[int, ...]:
    """``"1,5,10"`` -> ``(1, 5, 10)``: positive integers, sorted, unique."""
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return tuple(values)


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def _positive(text: str) -> int:
    value = _int_list(text)
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"expected one positive integer, got {text!r}")
    return value[0]


def _add_locomo(commands: Any) -> None:
    parser = commands.add_parser(
        "locomo", help="retrieval quality and latency on a LoCoMo-format file",
        description="Rank each conversation's turns for its questions with each system.",
        epilog=_LOCOMO_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("file", help="LoCoMo-format JSON (e.g. ../shared/locomo_dev.json)")
    parser.add_argument("--k", type=_int_list, default=(1, 5, 10, 20), metavar="K,...",
                        help="cut-offs (default 1,5,10,20)")  # fmt: skip
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), metavar="NAME,...",
                        help="systems to run (default: all seven)")  # fmt: skip
    parser.add_argument("--json", metavar="OUT", help="write the full report as JSON")
    parser.add_argument("--conversations", type=_names, default=(), metavar="ID,...",
                        help="only these sample ids (default: all)")  # fmt: skip
    parser.add_argument(
        "--budget-tokens",
        type=_positive,
        default=3000,
        metavar="N",
        help="also score the longest ranked prefix within N tokens (default 3000)",
    )
    parser.add_argument(
        "--depth",
        type=_positive,
        default=None,
        metavar="N",
        help="results asked per query (default max(--k); raise it so the budget binds)",
    )
    parser.add_argument(
        "--tiktoken-file",
        metavar="PATH",
        help="local cl100k_base.tiktoken (default: llama-index-core's copy)",
    )
    parser.add_argument("--dense-model", metavar="DIR", help="local all-MiniLM-L6-v2 directory")
    parser.add_argument(
        "--per-question",
        action="store_true",
        help="add each question's ranked ids to the JSON (ids only, no text)",
    )
    parser.set_defaults(func=_run_locomo)


def _add_scale(commands: Any) -> None:
    parser = commands.add_parser(
        "scale", help="ingest, add and recall cost as the store grows, against bm25s",
        description="Measure CueMap and bm25s at growing numbers of memories.",
        epilog=_SCALE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument(
        "--sizes",
        type=_int_list,
        default=(1000, 10_000, 100_000, 1_000_000),
        metavar="N,...",
        help="store sizes (default 1000,10000,100000,1000000)",
    )
    parser.add_argument(
        "--queries",
        type=_positive,
        default=200,
        metavar="N",
        help="recall queries per size (default 200)",
    )
    parser.add_argument("--json", metavar="OUT", help="write the full report as JSON")
    parser.add_argument(
        "--locomo",
        metavar="FILE",
        default="../shared/locomo_dev.json",
        help="text corpus (default ../shared/locomo_dev.json, relative to the cwd)",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=1200.0,
        metavar="S",
        help="time budget of the run; larger sizes are skipped (default 1200)",
    )
    parser.add_argument("--seed", type=int, default=7, help="corpus variation seed (default 7)")
    parser.add_argument(
        "--no-bm25s", dest="bm25s", action="store_false", help="measure CueMap only"
    )
    parser.add_argument(
        "--runs",
        type=_positive,
        default=3,
        metavar="N",
        help="in-memory runs per size (bulk ingest, then the recalls), each in a fresh process: "
        "the median ingest and the recall percentiles over all runs are reported (default 3)",
    )
    parser.set_defaults(func=_run_scale)


_SOAK_EPILOG = """\
Concurrency (threads sharing one store and processes with their own, adding, updating,
deleting and recalling at once on one SQLite file), crash (a child bulk-adding is killed with
SIGKILL at seeded random moments; the store is reopened and checked) and bad input (hostile calls
through the public API). Exit status 1 if any acknowledged memory was lost or any check failed.

Example:
  cuemap bench soak --seconds 180 --threads 4 --processes 2 --json benchmarks/results/soak.json
"""


def _add_soak(commands: Any) -> None:
    parser = commands.add_parser(
        "soak", help="reliability: concurrency, SIGKILL crashes, bad input, for longer",
        description="Run the reliability suite's checks for a time budget and count them.",
        epilog=_SOAK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument(
        "--seconds",
        type=float,
        default=180.0,
        metavar="S",
        help="time budget, split 50/30/20 between the phases (default 180)",
    )
    parser.add_argument(
        "--threads",
        type=_count,
        default=4,
        metavar="N",
        help="threads sharing one store (default 4)",
    )
    parser.add_argument(
        "--processes",
        type=_count,
        default=2,
        metavar="N",
        help="processes, each with its own store object (default 2)",
    )
    parser.add_argument(
        "--kills",
        type=_count,
        default=1000,
        metavar="N",
        help="most SIGKILLs to make within the crash phase (default 1000)",
    )
    parser.add_argument(
        "--inputs",
        type=_count,
        default=100_000,
        metavar="N",
        help="most bad inputs to try within the bad-input phase (default 100000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--dir", metavar="DIR", help="where the temporary stores go")
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    parser.set_defaults(func=_run_soak)  # fmt: skip


def _count(text: str) -> int:
    """A non-negative integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _add_commands(commands: Any) -> None:
    _add_locomo(commands)
    _add_scale(commands)
    _add_soak(commands)


def add_bench_parser(subparsers: Any) -> None:
    """Register ``bench`` (``locomo``, ``scale``, ``soak``) on a CLI's ``add_subparsers()``.

    Each leaf sets ``func``: call ``args.func(args)`` and exit with the int it returns.
    """
    bench = subparsers.add_parser(
        "bench", help="benchmarks: LoCoMo retrieval quality, scale, reliability soak",
        description="Benchmarks of CueMap against bm25s and dense baselines.",
        epilog="Example:\n  cuemap bench locomo ../shared/locomo_dev.json --systems cuemap,bm25s",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = bench.add_subparsers(dest="bench_command", metavar="{locomo,scale,soak}")
    commands.required = True
    _add_commands(commands)


def build_parser(prog: str = "python -m cuemap_integrations.bench") -> argparse.ArgumentParser:
    """A stand-alone parser whose commands are ``locomo``, ``scale`` and ``soak``."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="bench_command", metavar="{locomo,scale,soak}")
    commands.required = True
    _add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cuemap_integrations.bench``: parse ``argv`` and run the command."""
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


def _guarded(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command; expected failures print one line to stderr and give exit code 1.

    Like the main ``cuemap`` command line: ``cuemap bench: error: <message>``, status 1 (argparse
    usage errors stay 2).
    """
    from .data import LocomoError
    from .systems import BenchError

    try:
        return run(args)
    except (BenchError, LocomoError, OSError) as exc:
        print(f"cuemap bench: error: {exc}", file=sys.stderr)
        return 1


def _run_locomo(args: argparse.Namespace) -> int:
    from .cli import run_locomo_command

    return _guarded(run_locomo_command, args)


def _run_scale(args: argparse.Namespace) -> int:
    from .cli import run_scale_command

    return _guarded(run_scale_command, args)


def _run_soak(args: argparse.Namespace) -> int:
    from .cli import run_soak_command

    return _guarded(run_soak_command, args)
