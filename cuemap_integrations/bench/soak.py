"""``cuemap bench soak``: the reliability suite's checks, run for longer.

Three phases share the time budget: concurrency (threads sharing one store and processes each
with their own, adding, updating, deleting and recalling at once), crash (a child bulk-adding is
killed with SIGKILL at random moments, the store reopened and checked) and bad input (hostile
calls through the public API). The figures: operations held, kills survived, inputs tried and
memories lost, which must be 0.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cuemap_integrations import CueMap

from .report import code_info, fmt, format_table, machine_info
from .workload import crash_round, fuzz, lost_memories, run_mixed

__all__ = ["SoakOptions", "SoakReport", "format_soak", "run_soak"]

_CONCURRENCY_SHARE, _CRASH_SHARE = 0.5, 0.3  # of the time budget; bad input gets the rest
_FUZZ_LIMIT = 2_000  # max_content_chars of the fuzzed store, so "past the limit" stays cheap


@dataclass(frozen=True)
class SoakOptions:
    """What to run: a time budget, workers, kills and bad inputs (all seeded)."""

    seconds: float = 180.0
    threads: int = 4
    processes: int = 2
    kills: int = 100
    inputs: int = 5_000
    seed: int = 0
    directory: str | None = None


@dataclass
class SoakReport:
    """The figures of one soak run; ``problems`` lists every finding, as sentences."""

    options: dict[str, Any]
    operations_held: int = 0
    recall_hits_verified: int = 0
    concurrency_seconds: float = 0.0
    kills: int = 0
    kills_survived: int = 0
    crash_writes_acknowledged: int = 0
    crash_seconds: float = 0.0
    inputs_tried: int = 0
    input_seconds: float = 0.0
    memories_lost: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing lost and nothing else found."""
        return self.memories_lost == 0 and not self.problems

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe figures with the machine and code they were measured on."""
        return {**asdict(self), "ok": self.ok, "machine": machine_info(), "code": code_info()}


def run_soak(options: SoakOptions) -> SoakReport:
    """Run the three phases in a temporary folder (or ``options.directory``)."""
    report = SoakReport(options=asdict(options))
    with tempfile.TemporaryDirectory(dir=options.directory, prefix="cuemap-soak-") as folder:
        _concurrency(Path(folder) / "concurrency.db", options, report)
        _crashes(Path(folder) / "crash.db", options, report)
        _bad_input(options, report)
    return report


def _concurrency(db: Path, options: SoakOptions, report: SoakReport) -> None:
    started = time.monotonic()
    workers = run_mixed(
        str(db), threads=options.threads, processes=options.processes, operations=10**9,
        seed=options.seed, seconds=options.seconds * _CONCURRENCY_SHARE,
    )  # fmt: skip
    report.operations_held = sum(w.operations for w in workers)
    report.recall_hits_verified = sum(w.hits for w in workers)
    report.problems += [f"{w.name}: {e}" for w in workers for e in w.errors]
    report.problems += [f"{w.name}: half-written hit {b!r}" for w in workers for b in w.bad_hits]
    with CueMap(db) as cm:
        lost = lost_memories(cm, [w.ledger for w in workers])
        report.problems += lost + cm.check()
    report.memories_lost += len(lost)
    report.concurrency_seconds = round(time.monotonic() - started, 1)


def _crashes(db: Path, options: SoakOptions, report: SoakReport) -> None:
    started = time.monotonic()
    deadline = started + options.seconds * _CRASH_SHARE
    rng = random.Random(options.seed)
    while report.kills < options.kills and time.monotonic() < deadline:
        result = crash_round(str(db), f"k{report.kills}", rng)
        report.kills += 1
        report.kills_survived += not (result.lost or result.problems)
        report.crash_writes_acknowledged += len(result.acknowledged)
        report.memories_lost += len(result.lost)
        report.problems += [f"kill {report.kills}: {p}" for p in result.lost + result.problems]
    report.crash_seconds = round(time.monotonic() - started, 1)


def _bad_input(options: SoakOptions, report: SoakReport) -> None:
    started = time.monotonic()
    deadline = started + options.seconds * (1 - _CONCURRENCY_SHARE - _CRASH_SHARE)
    rng = random.Random(options.seed)
    while report.inputs_tried < options.inputs and time.monotonic() < deadline:
        batch = min(100, options.inputs - report.inputs_tried)
        # a fresh store per batch: the accepted inputs pile up, and every call is checked
        # against a full snapshot of the store
        with CueMap(config={"max_content_chars": _FUZZ_LIMIT}) as cm:
            cm.add("The API uses port 8001", memory_id="m1")
            report.problems += fuzz(cm, rng, batch)
        report.inputs_tried += batch
    report.input_seconds = round(time.monotonic() - started, 1)


def format_soak(report: SoakReport) -> str:
    """The figures as a table, then every problem found (none on a sound build)."""
    rows = [
        ["operations held (add, add_many, update, delete, recall)", fmt(report.operations_held)],
        ["recall hits verified by checksum", fmt(report.recall_hits_verified)],
        ["SIGKILLs survived / made", f"{report.kills_survived} / {report.kills}"],
        ["writes acknowledged before the kills", fmt(report.crash_writes_acknowledged)],
        ["bad inputs tried", fmt(report.inputs_tried)],
        ["memories lost", fmt(report.memories_lost)],
        ["other problems", fmt(len(report.problems))],
    ]
    seconds = (
        f"phases: concurrency {report.concurrency_seconds} s, crash {report.crash_seconds} s, "
        f"bad input {report.input_seconds} s"
    )
    lines = [format_table(["soak", "figure"], rows), seconds, "ok" if report.ok else "FAILED"]
    return "\n".join(lines + report.problems[:50])
