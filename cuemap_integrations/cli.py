"""The ``cuemap`` command line: store, recall, chat with, import, export and inspect memories.

Every subcommand opens the SQLite store given by ``--db`` (default: ``$CUEMAP_DB``, else
``./cuemap.db``) and the namespace given by ``--namespace`` (default ``default``). Both options are
accepted before or after the subcommand; the value after it wins.

Expected failures (bad input, unknown id, unreadable file) print one line
``cuemap: error: <message>`` on stderr and exit with status 1; usage errors exit with argparse's 2.

Example:
    $ cuemap add "The API uses port 8001" --type convention
    m-3f1c0e9a2b7d
    $ cuemap recall "which port does the api use?" --explain
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from . import __version__
from .bench import add_bench_parser
from .core import CueMap
from .errors import CueMapError
from .records import MemoryRecord, MemoryType, validate_namespace
from .results import Hit, RecallResult, RecallTrace, ScoreBreakdown
from .session import RecallSession

__all__ = ["build_parser", "format_hit", "format_why", "join_few", "main", "print_hits", "trim"]

PROG = "cuemap"
DEFAULT_DB = "cuemap.db"
DEFAULT_NAMESPACE = "default"
CHAT_SESSION = "cli-chat"  # the session `cuemap chat` uses (and resets) without --session
_TYPES = [t.value for t in MemoryType]
_CONTENT_WIDTH = 72
_SHOWN_CUES = 8

Handler = Callable[[argparse.Namespace], int]
_Item = MemoryRecord | dict[str, Any]


# ---------------------------------------------------------------------------- formatting
def trim(text: str, width: int = _CONTENT_WIDTH) -> str:
    """``text`` on one line, cut to ``width`` characters with ``...`` when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def format_hit(rank: int, hit: Hit, id_width: int = 0) -> str:
    """One table row: rank, score, id, type and the trimmed content."""
    memory = hit.memory
    return (
        f"{rank:>3}  {hit.score:7.3f}  {memory.memory_id:<{id_width}}  "
        f"{memory.type.value:<10}  {trim(memory.content)}"
    )


def _top_rules(breakdown: ScoreBreakdown, n: int = 3) -> list[tuple[str, float]]:
    parts = [(name, value) for name, value in breakdown.contributions if round(value, 2)]
    return sorted(parts, key=lambda part: -abs(part[1]))[:n]


def join_few(values: Sequence[str], n: int = 5) -> str:
    """The first ``n`` values joined by commas, then how many were left out."""
    more = len(values) - n
    return ", ".join(values[:n]) + (f" +{more} more" if more > 0 else "")


def format_why(breakdown: ScoreBreakdown) -> str:
    """A one-line reason for a hit: matched cues, carried session cues, top rule contributions."""
    parts = [
        f"{label} {join_few(values)}"
        for label, values in (
            ("cues", breakdown.matched_cues),
            ("session", breakdown.session_cues),
            ("tags", breakdown.matched_tags),
            ("terms", breakdown.matched_terms),
        )
        if values
    ]
    top = ", ".join(f"{name} {value:+.2f}" for name, value in _top_rules(breakdown))
    parts.append(f"top: {top}" if top else "top: none")
    return "; ".join(parts)


def _hit_details(breakdown: ScoreBreakdown) -> list[str]:
    rules = ", ".join(f"{name} {value:+.3f}" for name, value in breakdown.contributions)
    lines = [f"contributions: {rules}"]
    for label, values in (
        ("matched cues", breakdown.matched_cues),
        ("session cues", breakdown.session_cues),
        ("matched tags", breakdown.matched_tags),
        ("matched terms", breakdown.matched_terms),
    ):
        if values:
            lines.append(f"{label}: {', '.join(values)}")
    return lines


def _weighted(cues: Sequence[tuple[str, float]]) -> str:
    shown = ", ".join(f"{cue} ({weight:.2f})" for cue, weight in cues[:_SHOWN_CUES])
    more = len(cues) - _SHOWN_CUES
    return shown + (f" ... (+{more} more)" if more > 0 else "")


def _print_trace(trace: RecallTrace, out: TextIO) -> None:
    print(f"query cues: {', '.join(trace.query_cues) or '-'}", file=out)
    print(f"expanded cues: {_weighted(trace.expanded_cues) or '-'}", file=out)
    print(f"query terms: {', '.join(trace.query_terms) or '-'}", file=out)
    print(f"candidates: {trace.candidate_count}", file=out)
    print(file=out)


def print_hits(
    result: RecallResult,
    out: TextIO,
    *,
    header: bool = False,
    explain: bool = False,
    why: bool = False,
) -> None:
    """The ranked table (with a ``header`` row on request).

    ``explain`` adds every rule contribution and match under each hit, ``why`` a one-line reason.
    """
    if not result.hits:
        print("  (no memories recalled)", file=out)
        return
    width = max(len(hit.memory_id) for hit in result.hits)
    if header:
        print(f"{'#':>3}  {'score':>7}  {'id':<{width}}  {'type':<10}  content", file=out)
    for rank, hit in enumerate(result.hits, start=1):
        print(format_hit(rank, hit, width), file=out)
        details = _hit_details(hit.breakdown) if explain else []
        details += [f"why: {format_why(hit.breakdown)}"] if why else []
        for line in details:
            print(f"{'':>12}{line}", file=out)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _dump(data: Any) -> str:
    """Readable JSON (UTF-8, not ``\\u`` escapes), except for lone surrogates: a query typed
    with bytes that are not UTF-8 reaches ``argv`` as surrogates, which stdout cannot encode."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def result_as_dict(query: str, result: RecallResult) -> dict[str, Any]:
    """The ``recall --json`` document."""
    return {
        "query": query,
        "hits": [
            {
                "rank": rank,
                "memory": hit.memory.to_dict(),
                "score": round(hit.score, 6),
                "breakdown": hit.breakdown.as_dict(),
            }
            for rank, hit in enumerate(result.hits, start=1)
        ],
        "trace": None if result.trace is None else result.trace.as_dict(),
    }


# ---------------------------------------------------------------------------- store access
def _db_path(args: argparse.Namespace) -> str:
    if args.db is None:
        return os.environ.get("CUEMAP_DB") or DEFAULT_DB
    if not args.db:  # SQLite would silently open a throw-away database
        raise ValueError("--db needs a path")
    return str(args.db)


def _namespace(args: argparse.Namespace) -> str:
    return validate_namespace(DEFAULT_NAMESPACE if args.namespace is None else args.namespace)


@contextmanager
def _open(args: argparse.Namespace) -> Iterator[CueMap]:
    with CueMap(_db_path(args)) as cm:
        yield cm


# ---------------------------------------------------------------------------- add / delete / stats
def _add_options(args: argparse.Namespace) -> dict[str, Any]:
    options = {
        "namespace": _namespace(args),
        "cues": args.cues,
        "tags": args.tags,
        "type": args.type,
        "source": args.source,
        "memory_id": args.id,
        "expires_at": args.expires,
    }
    return {key: value for key, value in options.items() if value is not None}


def _cmd_add(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        record = cm.add(args.text, **_add_options(args))
    print(_dump(record.to_dict()) if args.json else record.memory_id)
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        record = cm.delete(args.id, namespace=_namespace(args))
    print(record.memory_id)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        problems = cm.check()
    if args.json:
        print(_dump({"ok": not problems, "problems": problems}))
    else:
        for problem in problems:
            print(problem)
        print("ok" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def _cmd_stats(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        stats = cm.stats().as_dict()
    if args.json:
        print(_dump(stats))
        return 0
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{name}={count}" for name, count in value.items()) or "-"
        print(f"{key}: {value}")
    return 0


# ---------------------------------------------------------------------------- recall
def _recall(cm: CueMap, args: argparse.Namespace) -> RecallResult:
    options: dict[str, Any] = {
        "k": args.k,
        "types": args.types,
        "sources": args.sources,
        "since": args.since,
        "until": args.until,
        "extra_cues": args.cues or (),
        "explain": True,
    }
    if args.session is not None:
        return cm.session(args.session, namespace=_namespace(args)).recall(args.query, **options)
    return cm.recall(args.query, namespace=_namespace(args), **options)


def _cmd_recall(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        result = _recall(cm, args)
    if args.json:
        print(_dump(result_as_dict(args.query, result)))
        return 0
    if args.explain and result.trace is not None:
        _print_trace(result.trace, sys.stdout)
    print_hits(result, sys.stdout, header=True, explain=args.explain)
    return 0


# ---------------------------------------------------------------------------- chat
def _chat_add(cm: CueMap, session: RecallSession, text: str, out: TextIO) -> None:
    record = cm.add(text, namespace=session.namespace, source="chat")
    print(f"added {record.memory_id}", file=out)


def _chat_recall(session: RecallSession, query: str, k: int, out: TextIO) -> None:
    carried = session.carried_cues()
    print(f"turn {session.turn + 1}: {query}", file=out)
    if carried:
        print(f"  carried over: {_weighted(carried)}", file=out)
    print_hits(session.recall(query, k=k), out, why=True)
    print(file=out)


def _chat_command(session: RecallSession, command: str, out: TextIO) -> bool:
    if command in ("/quit", "/exit"):
        return False
    if command == "/reset":
        session.reset()
        print("session reset", file=out)
    else:
        print("commands: /reset, /quit; '+ TEXT' stores a memory; anything else recalls", file=out)
    return True


def _chat_turn(cm: CueMap, session: RecallSession, line: str, k: int, out: TextIO) -> bool:
    """Handle one chat line; False ends the chat."""
    text = line.strip()
    try:
        if text.startswith("/"):
            return _chat_command(session, text.split()[0], out)
        if text == "+" or text.startswith("+ "):
            _chat_add(cm, session, text[1:].strip(), out)
        elif text:
            _chat_recall(session, text, k, out)
    except CueMapError as exc:
        _error(str(exc))
    return True


def chat_loop(cm: CueMap, session: RecallSession, k: int, stdin: TextIO, out: TextIO) -> None:
    """Read lines until EOF or ``/quit``; the ``> `` prompt is shown only on a terminal."""
    interactive = stdin.isatty()
    while True:
        if interactive:
            out.write("> ")
            out.flush()
        line = stdin.readline()
        if not line or not _chat_turn(cm, session, line, k, out):
            return
        out.flush()


def _cmd_chat(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        session = cm.session(args.session or CHAT_SESSION, namespace=_namespace(args))
        if args.session is None:
            session.reset()
        chat_loop(cm, session, args.k, sys.stdin, sys.stdout)
    return 0


# ---------------------------------------------------------------------------- import
def _read_bytes(path: str) -> bytes:
    if path != "-":
        with open(path, "rb") as handle:
            return handle.read()
    buffer = getattr(sys.stdin, "buffer", None)
    return buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")


def _parse_line(raw: bytes, number: int, namespace: str) -> _Item:
    """One JSON Lines entry: a full exported record, or a mapping of ``add`` arguments."""
    try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if "memory_id" in data and "created_at" in data:
        return MemoryRecord.from_dict(data)
    return {"namespace": namespace, **data}


def _explicit_key(item: _Item, record: MemoryRecord) -> tuple[str, str] | None:
    if isinstance(item, MemoryRecord) or "memory_id" in item:
        return (record.namespace, record.memory_id)
    return None


def _check_item(cm: CueMap, scratch: CueMap, item: _Item) -> None:
    """Validate ``item`` by storing it in ``scratch``; refuse ids already in ``cm``."""
    record = scratch.add_many([item])[0]
    key = _explicit_key(item, record)
    if key is not None and key in cm:
        raise ValueError(f"memory_id {key[1]!r} is already stored in namespace {key[0]!r}")


def _parse_all(
    cm: CueMap, data: bytes, namespace: str
) -> tuple[list[_Item], list[tuple[int, str]]]:
    good: list[_Item] = []
    bad: list[tuple[int, str]] = []
    with CueMap(config=cm.config, clock=cm.now) as scratch:
        for number, raw in enumerate(data.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                item = _parse_line(raw, number, namespace)
                _check_item(cm, scratch, item)
            except (CueMapError, ValueError) as exc:
                bad.append((number, str(exc)))
            else:
                good.append(item)
    return good, bad


def _cmd_import(args: argparse.Namespace) -> int:
    label = "<stdin>" if args.file == "-" else args.file
    data = _read_bytes(args.file)
    with _open(args) as cm:
        good, bad = _parse_all(cm, data, _namespace(args))
        for number, message in bad:
            print(f"{PROG}: {label}:{number}: {message}", file=sys.stderr)
        if bad and (args.on_error == "abort" or not good):
            _error(f"{len(bad)} bad line(s) in {label}; nothing imported")
            return 1
        cm.add_many(good)
    skipped = f", skipped {len(bad)} bad line(s)" if args.on_error == "skip" else ""
    print(f"imported {len(good)} memories{skipped}")
    return 0


# ---------------------------------------------------------------------------- export
def _write_lines(records: Sequence[MemoryRecord], out: TextIO) -> None:
    for record in records:
        out.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")


def _cmd_export(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        namespace = None if args.namespace is None else _namespace(args)  # None: all of them
        records = cm.memories(namespace=namespace)
    if args.file in (None, "-"):
        _write_lines(records, sys.stdout)
        return 0
    with open(args.file, "w", encoding="utf-8", newline="\n") as handle:
        _write_lines(records, handle)
    print(f"exported {len(records)} memories to {args.file}")
    return 0


# ---------------------------------------------------------------------------- capture
def _read_messages(path: str) -> list[dict[str, Any]]:
    """Messages from JSON Lines; a bad line is an error naming its number (nothing captured)."""
    messages: list[dict[str, Any]] = []
    for number, raw in enumerate(_read_bytes(path).splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}:{number}: not a JSON object ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object with role and content")
        messages.append(data)
    return messages


def _cmd_capture(args: argparse.Namespace) -> int:
    messages = _read_messages(args.file)
    with _open(args) as cm:
        result = cm.capture(
            messages, session_id=args.session, namespace=_namespace(args), mode=args.mode
        )
    if args.json:
        print(_dump({
            "records": [r.to_dict() for r in result.records],
            "skipped": [list(s) for s in result.skipped],
            "redactions": dict(result.redactions),
        }))  # fmt: skip
        return 0
    for record in result.records:
        print(f"{record.memory_id}  {record.type.value:<10}  {trim(record.content)}")
    reasons: dict[str, int] = {}
    for _, reason in result.skipped:
        reasons[reason] = reasons.get(reason, 0) + 1
    summary = ", ".join(f"{n} {why}" for why, n in reasons.items()) or "none"
    redacted = ", ".join(f"{n} {c}" for c, n in result.redactions.items()) or "none"
    print(f"captured {len(result.records)}; skipped: {summary}; redacted: {redacted}")
    return 0


# ---------------------------------------------------------------------------- forget, history
def _cmd_forget(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        removed = cm.forget(
            args.ids or None, namespace=_namespace(args), types=args.types, sources=args.sources,
            before=args.before, everything=args.everything,
        )  # fmt: skip
    for record in removed:
        print(record.memory_id)
    print(f"forgot {len(removed)} memories", file=sys.stderr)
    return 0


def _cmd_history(args: argparse.Namespace) -> int:
    with _open(args) as cm:
        chain = cm.history(args.id, namespace=_namespace(args))
    if args.json:
        print(_dump([r.to_dict() for r in chain]))
        return 0
    for record in chain:
        state = f"superseded {record.superseded_at:%Y-%m-%d}" if record.superseded_at else "active"
        print(
            f"{record.created_at:%Y-%m-%d}  {record.memory_id}  {state:<21} {trim(record.content)}"
        )
    return 0


# ---------------------------------------------------------------------------- demo
def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out=sys.stdout)


# ---------------------------------------------------------------------------- parser
def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH|URL",
        default=default,
        help=f"SQLite file or postgresql:// URL (default: $CUEMAP_DB, else ./{DEFAULT_DB})",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        default=default,
        help=f"namespace to use (default: {DEFAULT_NAMESPACE!r}; export: every namespace)",
    )


def _subcommand(
    subs: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    example: str,
    handler: Handler,
) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)  # absent after the subcommand: keep the global value
    parser = subs.add_parser(
        name,
        help=summary,
        description=summary,
        epilog="Example:\n" + example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.set_defaults(handler=handler)
    return parser


def _add_parser(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _subcommand(
        subs, "add", "Store one memory and print its id.",
        '  cuemap add "The API uses port 8001" --type convention --cue port --tag ops\n',
        _cmd_add,
    )  # fmt: skip
    p.add_argument("text", help="the text to remember")
    p.add_argument("--cue", dest="cues", action="append", metavar="C", help="a cue (repeatable)")
    p.add_argument("--tag", dest="tags", action="append", metavar="T", help="a tag (repeatable)")
    p.add_argument("--type", choices=_TYPES, help="memory type (default: note)")
    p.add_argument("--source", metavar="S", help="where the memory comes from")
    p.add_argument("--id", metavar="ID", help="memory id (default: derived from the content)")
    p.add_argument("--expires", metavar="ISO", help="expiry, ISO 8601 with offset")
    p.add_argument("--json", action="store_true", help="print the stored record as JSON")


def _recall_parser(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _subcommand(
        subs, "recall", "Recall the memories that best match a query.",
        '  cuemap recall "why were orders timing out?" --explain\n'
        '  cuemap recall "how did we fix it?" --session s1 --json\n',
        _cmd_recall,
    )  # fmt: skip
    p.add_argument("query", help="free text in any language")
    p.add_argument("-k", type=int, default=5, help="how many memories at most (default: 5)")
    p.add_argument("--type", dest="types", action="append", choices=_TYPES, help="keep this type")
    p.add_argument(
        "--source", dest="sources", action="append", metavar="S", help="keep this source"
    )
    p.add_argument("--since", metavar="ISO", help="created at or after (ISO 8601 with offset)")
    p.add_argument("--until", metavar="ISO", help="created at or before (ISO 8601 with offset)")
    p.add_argument("--cue", dest="cues", action="append", metavar="C", help="an extra cue")
    p.add_argument("--explain", action="store_true", help="show the trace and every rule")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--session", metavar="ID", help="continue this recall session (kept in the db)")


def _chat_parser(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _subcommand(
        subs, "chat", "Continuous recall, one line per turn, from stdin.",
        "  printf 'why were orders timing out?\\nhow did we fix it?\\n' | cuemap chat\n\n"
        "Inside the chat: '+ TEXT' stores a memory, /reset starts over, /quit (or EOF) ends.\n"
        f"Without --session the session {CHAT_SESSION!r} is used and reset at start.\n",
        _cmd_chat,
    )  # fmt: skip
    p.add_argument("--session", metavar="ID", help="resume this session (kept in the db)")
    p.add_argument("-k", type=int, default=3, help="memories per turn (default: 3)")


def _io_parsers(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _subcommand(
        subs, "import", "Import memories from JSON Lines (one object per line).",
        "  cuemap import memories.jsonl --on-error skip\n"
        "  echo '{\"content\": \"The API uses port 8001\"}' | cuemap import -\n\n"
        "A line is an exported record (has memory_id and created_at) or add arguments with\n"
        "'content'. All good lines are stored in one transaction. With --on-error abort\n"
        "(default) one bad line imports nothing; with skip the good lines are imported.\n",
        _cmd_import,
    )  # fmt: skip
    p.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    p.add_argument("--on-error", choices=["abort", "skip"], default="abort")
    p = _subcommand(
        subs, "export", "Export memories as JSON Lines (every namespace unless -n is given).",
        "  cuemap export backup.jsonl\n  cuemap export -n work > work.jsonl\n",
        _cmd_export,
    )  # fmt: skip
    p.add_argument("file", metavar="FILE", nargs="?", help="output file (default: stdout)")


def _lifecycle_parsers(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _subcommand(
        subs, "capture", "Turn conversation turns (JSON Lines) into memories by rule.",
        "  cuemap capture chat.jsonl --session thread-7\n\n"
        'Each line: {"role": "user", "content": "From now on call me Sam"} (optional\n'
        '"timestamp", "name"). Only preferences, conventions, facts and tasks are kept (or every\n'
        "turn with --mode all); secrets are redacted first; duplicates are not stored twice.\n",
        _cmd_capture,
    )  # fmt: skip
    p.add_argument("file", metavar="FILE", help="JSON Lines of messages, or - for stdin")
    p.add_argument("--session", default="cli", help="session id recorded in metadata")
    p.add_argument("--mode", choices=["rules", "all"], default="rules")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = _subcommand(
        subs, "forget", "Delete memories for good: by id, by filter, or a whole namespace.",
        "  cuemap forget m-3f1c0e9a2b7d\n  cuemap forget --type task --before 2026-01-01T00:00:00Z\n"
        "  cuemap -n tenant-b forget --everything\n",
        _cmd_forget,
    )  # fmt: skip
    p.add_argument("ids", metavar="ID", nargs="*")
    p.add_argument("--type", dest="types", action="append", choices=_TYPES)
    p.add_argument("--source", dest="sources", action="append")
    p.add_argument("--before", metavar="ISO", help="created before this time")
    p.add_argument("--everything", action="store_true", help="the whole namespace")
    p = _subcommand(
        subs, "history", "Show every version of a memory (supersession chain), oldest first.",
        "  cuemap history m-3f1c0e9a2b7d\n", _cmd_history,
    )  # fmt: skip
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true", help="print JSON")


def _admin_parsers(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = _subcommand(
        subs, "delete", "Delete a memory by id.", "  cuemap delete m-3f1c0e9a2b7d\n", _cmd_delete
    )
    p.add_argument("id", metavar="ID")
    p = _subcommand(
        subs,
        "stats",
        "Show counts of memories, cues and sessions.",
        "  cuemap stats --json\n",
        _cmd_stats,
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p = _subcommand(
        subs, "check", "Check the store: SQLite integrity, index vs tables, dangling links.",
        "  cuemap --db memory.db check\n\nExit status 0 when sound, 1 with one line per problem.\n",
        _cmd_check,
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    _subcommand(
        subs, "demo", "Run the scripted continuous-recall demo (in memory; ignores --db).",
        "  cuemap demo\n", _cmd_demo,
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The ``cuemap`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Deterministic long-term memory with continuous recall.",
        epilog='Example:\n  cuemap add "The API uses port 8001"\n  cuemap recall "api port?"\n',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_common(parser, None)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    registers = (_add_parser, _recall_parser, _chat_parser, _io_parsers, _lifecycle_parsers)
    for register in (*registers, _admin_parsers):
        register(subs)
    add_bench_parser(subs)  # `cuemap bench locomo|scale|soak`; heavy imports happen only when run
    return parser


# ---------------------------------------------------------------------------- entry point
def _error(message: str) -> None:
    print(f"{PROG}: error: {' '.join(message.splitlines())}", file=sys.stderr)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _silence_stdout() -> None:
    """After a closed pipe (``cuemap export | head``) keep the exit-time flush quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``cuemap`` command line; return the process exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (status 2)
        return _exit_code(exc.code)
    handler: Handler = getattr(args, "handler", None) or args.func
    try:
        return handler(args)
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except (CueMapError, OSError, ValueError) as exc:
        _error(str(exc) or type(exc).__name__)
        return 1
    except KeyboardInterrupt:
        return 130
