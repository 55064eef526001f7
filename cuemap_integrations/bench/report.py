"""Plain-text tables and JSON files for the benchmark reports, and the machine description."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["code_info", "format_locomo", "format_table", "machine_info", "write_json"]


def machine_info() -> dict[str, Any]:
    """What ran the benchmark: platform, CPU, cores, memory, Python."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model() or platform.processor(),
        "cpu_count": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
    }


def code_info() -> dict[str, Any]:
    """Which core was measured: the package version and a SHA-256 over its modules' source.

    The core's recall is tuned from these figures, so each report names the exact code it ran
    (every ``cuemap_integrations/*.py`` outside ``bench/``, in name order).
    """
    from .. import __version__

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for module in sorted(package.glob("*.py")):
        digest.update(module.name.encode() + b"\0" + module.read_bytes() + b"\0")
    return {"version": __version__, "core_sha256": digest.hexdigest()}


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def write_json(path: str | os.PathLike[str], data: Mapping[str, Any]) -> Path:
    """Write ``data`` as indented UTF-8 JSON (parent folders created) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def fmt(value: Any, digits: int = 3) -> str:
    """A cell: floats with ``digits`` decimals, None as "-"."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first column left-aligned, the others right."""
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        parts = [
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def _overall_table(report: Mapping[str, Any]) -> str:
    ks = report["config"]["ks"]
    headers = ["system", *(f"{m}@{k}" for m in ("R", "H", "W") for k in ks), f"MRR@{max(ks)}", "n"]
    rows = []
    for name, res in report["systems"].items():
        overall = res["overall"]
        cells = [fmt(overall[f"{m}@{k}"]) for m in ("R", "H", "W") for k in ks]
        rows.append([name, *cells, fmt(overall["MRR"]), str(overall["n"])])
    return format_table(headers, rows)


def category_k(ks: Sequence[int]) -> int:
    """The cut-off of the per-category table: 10 when measured, else the largest k."""
    return 10 if 10 in ks else max(ks)


def _category_table(report: Mapping[str, Any]) -> str:
    k = category_k(report["config"]["ks"])
    cats = list(report["systems"][next(iter(report["systems"]))]["by_category"])
    names = report["categories"]
    headers = ["system", *(f"{c} {names[c]}" for c in cats), "overall"]
    rows = []
    for name, res in report["systems"].items():
        cells = [fmt(res["by_category"][c][f"R@{k}"]) for c in cats]
        rows.append([name, *cells, fmt(res["overall"][f"R@{k}"])])
    counts = [
        f"n={report['systems'][next(iter(report['systems']))]['by_category'][c]['n']}" for c in cats
    ]
    rows.append(["(questions)", *counts, ""])
    return f"R@{k} by category\n" + format_table(headers, rows)


def _adversarial_table(report: Mapping[str, Any]) -> str:
    ks = report["config"]["ks"]
    unit = "tok" if report["tokens"]["exact"] else "bytes"
    headers = ["system", *(f"W@{k}" for k in ks), *(f"{unit}@{k}" for k in ks), "n"]
    rows = []
    for name, res in report["systems"].items():
        wide = res["with_adversarial"]
        rows.append([name, *(fmt(wide["W"][str(k)]) for k in ks),
                     *(fmt(wide["tokens_mean"][str(k)], 1) for k in ks), str(wide["n"])])  # fmt: skip
    return "W@k over categories 1-5 (adversarial included) and mean context size\n" + format_table(
        headers, rows
    )


def _latency_table(report: Mapping[str, Any]) -> str:
    budget = report["config"]["budget_tokens"]
    headers = ["system", "p50 ms", "p95 ms", "build s", f"R@{budget}t", f"H@{budget}t",
               f"W@{budget}t", "mem/ctx", "cut"]  # fmt: skip
    rows = []
    for name, res in report["systems"].items():
        lat, bud = res["latency_ms"], res["budget"]
        rows.append([name, fmt(lat["p50"], 2), fmt(lat["p95"], 2), fmt(res["build_seconds"], 2),
                     fmt(bud["R"]), fmt(bud["H"]), fmt(bud["W"]), fmt(bud["memories_mean"], 1),
                     fmt(bud["binding_share"], 2)])  # fmt: skip
    note = (f"Query latency (search call only, depth {report['config']['depth']}) and, within a "
            f"{budget}-token context ('cut' = share of questions the budget cut)")  # fmt: skip
    text = note + "\n" + format_table(headers, rows)
    if all(not res["budget"]["binding_share"] for res in report["systems"].values()):
        text += f"\n(no ranking reached {budget} tokens: these equal @{report['config']['depth']}; rank deeper with --depth)"
    return text


def _evidence_text(report: Mapping[str, Any]) -> str:
    ev = report["evidence"]
    kinds = ", ".join(f"{kind} {n}" for kind, n in ev["problem_counts"].items())
    lines = [
        f"Questions: {ev['questions']} (scored: {ev['scored_strict']} in categories 1-4, "
        f"{ev['scored_with_adversarial']} in 1-5; without evidence: {ev['without_evidence']}; "
        f"no usable evidence: {ev['without_usable_evidence']})",
        f"Evidence problems: {kinds}",
    ]
    for problem in ev["problems"]:
        if problem["kind"] != "duplicate":
            lines.append(f"  {problem['kind']}: {problem['raw']!r} ({problem['sample_id']} "
                         f"question #{problem['question_index']})")  # fmt: skip
    return "\n".join(lines)


def format_locomo(report: Mapping[str, Any]) -> str:
    """The readable report printed by ``cuemap bench locomo``."""
    cfg = report["config"]
    tokens = report["tokens"]
    exact = "" if tokens["exact"] else " (exact: false)"
    head = (f"LoCoMo retrieval: {len(cfg['conversations'])} conversations, {cfg['memories']} memories "
            f"({cfg['file']}); tokens: {tokens['encoding']}{exact}; "
            f"core {report['code']['version']} sha256 {report['code']['core_sha256'][:12]}")  # fmt: skip
    parts = [head, "", "Overall, categories 1-4", _overall_table(report), "", _category_table(report), "",
             _adversarial_table(report), "", _latency_table(report), "", _evidence_text(report)]  # fmt: skip
    dense_side = _fallback_table(report)
    if dense_side:
        parts[-1:-1] = [dense_side, ""]
    return "\n".join(parts)


def _fallback_table(report: Mapping[str, Any]) -> str:
    """How often the hybrid systems asked the dense side, and what it cost."""
    headers = [
        "system",
        "recalls",
        "dense queried",
        "rate",
        "dense hits",
        "ms/queried",
        "ms/recall",
    ]
    rows = []
    for name, res in report["systems"].items():
        fb = res.get("describe", {}).get("fallback")
        if fb:
            rows.append([name, fb["recalls"], fb["fired"], fmt(fb["fire_rate"]), fb["dense_hits"],
                         fmt(fb["dense_ms_per_fired"], 2), fmt(fb["dense_ms_per_recall"], 2)])  # fmt: skip
    if not rows:
        return ""
    return "Dense side of the hybrid systems (query embedding + search)\n" + format_table(
        headers, rows
    )


def print_report(text: str) -> None:
    """Print to stdout (one place, so tests can capture it)."""
    sys.stdout.write(text + "\n")
