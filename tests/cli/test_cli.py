"""The ``cuemap`` command line, run in-process through ``main()`` (and twice as a real process)."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap
from cuemap_integrations.cli import build_parser
from cuemap_integrations.demo import SESSIONS, Scenario, build_store, play

from .conftest import Cli

CAUSE = "Orders were timing out because the Redis cache expired"
FIX = "We ran curl -X POST /ops/clear-cache to flush Redis"
PORT = "The API uses port 8001"
DISTRACTORS = (
    "Lunch order for the team goes out at noon",
    "Repaired my bike's flat tyre on Sunday",
)


def _seed(cli: Cli) -> None:
    assert cli("add", CAUSE, "--id", "cause", "--type", "fact").code == 0
    assert cli("add", FIX, "--id", "fix", "--type", "fact").code == 0
    assert cli("add", PORT, "--id", "port", "--type", "convention").code == 0
    for n, text in enumerate(DISTRACTORS):
        assert cli("add", text, "--id", f"noise-{n}").code == 0


def _records(db: Path) -> list[dict[str, object]]:
    with CueMap(db) as cm:
        return [r.to_dict() for r in cm.memories()]


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cuemap: error: ")
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------- add / recall
def test_add_prints_the_id_and_recall_finds_it(cli: Cli) -> None:
    _seed(cli)
    added = cli("add", "Deploys go out on Tuesdays after the test suite passes")
    assert added.code == 0 and added.out.strip().startswith("m-")
    result = cli("recall", "which port does the api use?")
    assert result.code == 0
    header, row = result.out.splitlines()[:2]
    assert header.split() == ["#", "score", "id", "type", "content"]
    rank, score, memory_id, kind = row.split()[:4]
    assert (rank, memory_id, kind) == ("1", "port", "convention") and float(score) > 0
    assert row.endswith(PORT)


def test_add_json_returns_the_stored_record(cli: Cli) -> None:
    result = cli(
        "add", PORT, "--cue", "Port", "--tag", "ops", "--type", "convention",
        "--source", "wiki", "--id", "p1", "--expires", "2030-01-01T08:00:00+08:00", "--json",
    )  # fmt: skip
    record = json.loads(result.out)
    assert record["memory_id"] == "p1" and record["content"] == PORT
    assert record["cues"] == ["port"] and record["tags"] == ["ops"]
    assert record["type"] == "convention" and record["source"] == "wiki"
    assert record["expires_at"] == "2030-01-01T00:00:00+00:00"
    assert record["cue_origin"] == "given"


def test_recall_json_is_one_document_with_hits_and_trace(cli: Cli) -> None:
    _seed(cli)
    data = json.loads(cli("recall", "which port does the api use?", "--json", "-k", "2").out)
    assert data["query"] == "which port does the api use?"
    assert [h["memory"]["memory_id"] for h in data["hits"]][:1] == ["port"]
    assert len(data["hits"]) <= 2
    top = data["hits"][0]
    assert top["memory"]["content"] == PORT and top["memory"]["type"] == "convention"
    assert sum(top["breakdown"]["contributions"].values()) == pytest.approx(top["score"], abs=1e-4)
    assert "port" in top["breakdown"]["matched_cues"]
    assert "port" in data["trace"]["query_cues"]
    assert data["trace"]["order"][0] == "port"


def test_recall_explain_shows_trace_contributions_and_matches(cli: Cli) -> None:
    _seed(cli)
    out = cli("recall", "why were orders timing out?", "--explain").out
    assert "query cues: " in out and "timeout" in out.split("query cues: ")[1].splitlines()[0]
    expanded = out.split("expanded cues: ")[1].splitlines()[0]
    assert "redis" in expanded  # pseudo-relevance feedback: the top hit lends its cues
    assert "candidates: " in out
    hit_line = next(line for line in out.splitlines() if line.lstrip().startswith("1 "))
    assert "cause" in hit_line
    contributions = next(line for line in out.splitlines() if "contributions:" in line)
    assert "cue +" in contributions and "content +" in contributions
    assert any(
        line.strip().startswith("matched cues: ") and "order" in line for line in out.splitlines()
    )


def test_recall_filters_type_source_and_time(cli: Cli) -> None:
    cli("add", "Port 8001 is for the API", "--type", "convention", "--source", "wiki", "--id", "a")
    cli("add", "Port 9000 is for metrics", "--type", "fact", "--source", "chat", "--id", "b")

    def ids(*extra: str) -> list[str]:
        hits = json.loads(cli("recall", "port", "--json", *extra).out)["hits"]
        return [h["memory"]["memory_id"] for h in hits]

    assert sorted(ids()) == ["a", "b"]
    assert ids("--type", "fact") == ["b"]
    assert ids("--source", "wiki") == ["a"]
    assert ids("--since", "2999-01-01T00:00:00+00:00") == []
    assert sorted(ids("--until", "2999-01-01T00:00:00Z")) == ["a", "b"]


def test_recall_without_matches_says_so(cli: Cli) -> None:
    _seed(cli)
    result = cli("recall", "zebra crossing")
    assert result.code == 0 and "(no memories recalled)" in result.out


def test_extra_cue_option_reaches_the_query(cli: Cli) -> None:
    cli("add", "Rotate the signing keys every quarter", "--cue", "security", "--id", "keys")
    assert "keys" not in cli("recall", "what should I do?").out
    assert "keys" in cli("recall", "what should I do?", "--cue", "security").out


# ---------------------------------------------------------------------------- sessions
def test_session_continues_across_separate_invocations(cli: Cli) -> None:
    _seed(cli)
    first = json.loads(
        cli("recall", "why do orders time out?", "--session", "s1", "-k", "1", "--json").out
    )
    assert [h["memory"]["memory_id"] for h in first["hits"]] == ["cause"]
    follow_up = "what command did we run afterwards?"
    alone = json.loads(cli("recall", follow_up, "--json").out)
    assert alone["trace"]["query_cues"] == [] and alone["hits"] == []  # no cue of its own
    second = json.loads(cli("recall", follow_up, "--session", "s1", "--json").out)
    ids = [h["memory"]["memory_id"] for h in second["hits"]]
    assert "fix" in ids  # found only through the cues turn 1 (a separate process) carried
    fix = second["hits"][ids.index("fix")]["breakdown"]
    assert {"redis", "cache"} <= set(fix["session_cues"])
    assert dict(second["trace"]["expanded_cues"])["redis"] == pytest.approx(1.0)
    assert json.loads(cli("stats", "--json").out)["sessions"] == 1


@pytest.mark.xfail(
    strict=True,
    reason='rules cannot tell that "ran" ~ "run" or that a curl call is a "command", so the '
    "carried cues rank turn 1's memory first (the linked one is second: see the test above). "
    "The hybrid fallback does not reorder (it only adds hits). An irregular-form table "
    "(ran->run, bought->buy, ...) fixes this case but moved locomo_dev W@20 0.961 -> 0.956 "
    "(R@10 0.740 -> 0.746): not taken. Remove the marker when a rule reaches it.",
)
def test_session_follow_up_ranks_the_linked_memory_first(cli: Cli) -> None:
    _seed(cli)
    cli("recall", "why do orders time out?", "--session", "s1", "-k", "1")
    second = json.loads(
        cli("recall", "what command did we run afterwards?", "--session", "s1", "--json").out
    )
    assert second["hits"][0]["memory"]["memory_id"] == "fix"


def test_sessions_are_separate_per_id(cli: Cli) -> None:
    _seed(cli)
    cli("recall", "why do orders time out?", "--session", "s1", "-k", "1")
    other = json.loads(
        cli("recall", "what command did we run afterwards?", "--session", "s2", "--json").out
    )
    assert other["hits"] == [] and other["trace"]["expanded_cues"] == []


# ---------------------------------------------------------------------------- global options
def test_db_and_namespace_after_the_subcommand_win(run: Cli, tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    assert run("--db", str(a), "-n", "x", "add", PORT, "--db", str(b), "--namespace", "y").code == 0
    assert not a.exists()
    with CueMap(b) as cm:
        assert [(r.namespace, r.content) for r in cm.memories()] == [("y", PORT)]
    assert run("-n", "y", "--db", str(b), "recall", "port").out.count(PORT) == 1
    assert "no memories" in run("--db", str(b), "recall", "port", "-n", "x").out


def test_db_defaults_to_the_environment(
    run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "env.db"
    monkeypatch.setenv("CUEMAP_DB", str(target))
    assert run("add", PORT).code == 0
    assert [r["content"] for r in _records(target)] == [PORT]


def test_db_defaults_to_cuemap_db_in_the_working_directory(
    run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUEMAP_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    assert run("add", PORT).code == 0
    assert (tmp_path / "cuemap.db").exists()


# ---------------------------------------------------------------------------- import
def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _good(content: str, **extra: object) -> bytes:
    return json.dumps({"content": content, **extra}, ensure_ascii=False).encode()


def test_import_abort_mode_imports_nothing_and_names_the_line(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    src = _write(tmp_path / "in.jsonl", [_good(PORT), b'{"content": "broken', _good(FIX)])
    result = cli("import", str(src))
    assert result.code == 1
    assert f"{src}:2: invalid JSON" in result.err
    assert result.err.splitlines()[-1].startswith("cuemap: error: 1 bad line(s)")
    assert "nothing imported" in result.err
    assert _records(db) == []


def test_import_skip_mode_imports_the_good_lines(cli: Cli, db: Path, tmp_path: Path) -> None:
    src = _write(
        tmp_path / "in.jsonl",
        [_good(PORT, type="convention", tags=["ops"]), b"[1, 2]", b"", _good(FIX, memory_id="fix")],
    )
    result = cli("import", str(src), "--on-error", "skip")
    assert result.code == 0
    assert "imported 2 memories, skipped 1 bad line(s)" in result.out
    assert f"{src}:2: expected a JSON object, got list" in result.err
    stored = {r["content"]: r for r in _records(db)}
    assert set(stored) == {PORT, FIX}
    assert stored[PORT]["type"] == "convention" and stored[PORT]["tags"] == ["ops"]
    assert stored[FIX]["memory_id"] == "fix"


def test_import_reports_invalid_utf8_with_its_line_number(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    src = _write(tmp_path / "in.jsonl", [_good(PORT), _good("订单超时"), b'{"content": "caf\xe9"}'])
    result = cli("import", str(src), "--on-error", "skip")
    assert result.code == 0
    assert f"{src}:3: invalid UTF-8" in result.err
    assert sorted(str(r["content"]) for r in _records(db)) == sorted([PORT, "订单超时"])


def test_import_reports_validation_errors_and_duplicates_per_line(
    cli: Cli, db: Path, tmp_path: Path
) -> None:
    cli("add", "already here", "--id", "taken")
    src = _write(
        tmp_path / "in.jsonl",
        [
            _good(PORT, memory_id="p"),
            _good("bad type", type="bogus"),
            _good("no content key").replace(b'"content"', b'"text"'),
            _good("again", memory_id="p"),
            _good("clash", memory_id="taken"),
            _good("wrong kind", cues=5),
            b'{"memory_id": "r", "content": "x", "created_at": "2026-01-01T00:00:00+00:00"}',
            _good("   "),
        ],
    )
    result = cli("import", str(src))
    assert result.code == 1 and "Traceback" not in result.err
    for number, words in [(2, "type"), (3, "content"), (4, "already stored"), (5, "already stored"),
                          (6, "cues"), (7, "updated_at"), (8, "content")]:  # fmt: skip
        assert any(line.startswith(f"cuemap: {src}:{number}: ") and words in line
                   for line in result.err.splitlines()), (number, result.err)  # fmt: skip
    assert f"{src}:1:" not in result.err
    assert [r["memory_id"] for r in _records(db)] == ["taken"]


def test_import_from_stdin(cli: Cli, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\xef\xbb\xbf" + _good(PORT) + b"\r\n" + _good("订单超时的修复方法") + b"\r\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    result = cli("import", "-")
    assert result.code == 0 and "imported 2 memories" in result.out
    assert [r["content"] for r in _records(db)] == [PORT, "订单超时的修复方法"]


def test_import_missing_file_is_one_error_line(cli: Cli, tmp_path: Path) -> None:
    result = cli("import", str(tmp_path / "nope.jsonl"))
    assert result.code == 1
    assert "nope.jsonl" in _one_error_line(result.err)


def test_import_only_bad_lines_in_skip_mode_fails(cli: Cli, tmp_path: Path) -> None:
    src = _write(tmp_path / "in.jsonl", [b"not json"])
    result = cli("import", str(src), "--on-error", "skip")
    assert result.code == 1 and "nothing imported" in result.err


# ---------------------------------------------------------------------------- export
def _populate(cli: Cli, tmp_path: Path) -> None:
    _seed(cli)
    cli("add", "订单超时是因为 Redis 缓存过期", "-n", "zh", "--tag", "事故", "--type", "fact")
    cli("add", "Temporary VPN password rotates", "--expires", "2030-05-01T00:00:00+02:00")
    src = _write(tmp_path / "meta.jsonl", [_good("Meta memory", metadata={"k": [1, 2.5, None]})])
    cli("import", str(src))
    cli("recall", "which port does the api use?")  # access statistics travel too


def test_export_then_import_reproduces_every_record(
    cli: Cli, run: Cli, db: Path, tmp_path: Path
) -> None:
    _populate(cli, tmp_path)
    dump = tmp_path / "dump.jsonl"
    assert cli("export", str(dump)).code == 0
    fresh = tmp_path / "fresh.db"
    assert run("--db", str(fresh), "import", str(dump)).code == 0
    original = _records(db)
    assert {r["namespace"] for r in original} == {"default", "zh"}
    assert any(r["access_count"] for r in original)
    assert _records(fresh) == original
    assert run("--db", str(fresh), "export").out == dump.read_text(encoding="utf-8")


def test_export_to_stdout_is_json_lines_and_namespace_restricts(cli: Cli, tmp_path: Path) -> None:
    _populate(cli, tmp_path)
    everything = [json.loads(line) for line in cli("export").out.splitlines()]
    assert len(everything) == 8 and everything == [
        json.loads(x) for x in cli("export", "-").out.splitlines()
    ]
    only_zh = [json.loads(line) for line in cli("export", "-n", "zh").out.splitlines()]
    assert [r["content"] for r in only_zh] == ["订单超时是因为 Redis 缓存过期"]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    contents=st.lists(
        st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "\x00" not in s),
        min_size=1, max_size=4, unique=True,
    ),
)  # fmt: skip
def test_export_import_round_trip_any_text(run: Cli, contents: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst, dump = (os.path.join(tmp, name) for name in ("a.db", "b.db", "d.jsonl"))
        with CueMap(src) as cm:
            cm.add_many({"content": c} for c in contents)
        assert run("--db", src, "export", dump).code == 0
        assert run("--db", dst, "import", dump).code == 0
        assert _records(Path(dst)) == _records(Path(src))


# ---------------------------------------------------------------------------- delete, stats, errors
def test_delete_unknown_id_is_one_error_line(cli: Cli) -> None:
    _seed(cli)
    result = cli("delete", "nope")
    assert result.code == 1 and result.out == ""
    assert "nope" in _one_error_line(result.err)


def test_delete_removes_the_memory(cli: Cli, db: Path) -> None:
    _seed(cli)
    result = cli("delete", "port")
    assert result.code == 0 and result.out.strip() == "port"
    assert "port" not in [r["memory_id"] for r in _records(db)]
    assert "The API uses" not in cli("recall", "which port does the api use?").out


def test_stats_json(cli: Cli, db: Path) -> None:
    _seed(cli)
    cli("add", "x-ray results are in", "-n", "other")
    stats = json.loads(cli("stats", "--json").out)
    assert stats["memories"] == 6 and stats["namespaces"] == {"default": 5, "other": 1}
    assert stats["types"]["fact"] == 2 and stats["path"] == str(db)
    text = cli("stats").out
    assert "memories: 6" in text and "namespaces: default=5, other=1" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["recall", "x", "--since", "2020-01-01"],  # naive timestamp
        ["recall", "x", "-k", "0"],
        ["add", "   "],
        ["add", "x", "--expires", "soon"],
        ["recall", "x", "--session", "bad\x01id"],
        ["--db", "", "stats"],  # SQLite would open a throw-away database
        ["export", "-n", ""],
        ["add", "x", "-n", "   "],
    ],
)
def test_expected_errors_are_one_line_and_status_1(cli: Cli, argv: list[str]) -> None:
    result = cli(*argv)
    assert result.code == 1
    _one_error_line(result.err)


def test_duplicate_id_is_an_error(cli: Cli) -> None:
    cli("add", PORT, "--id", "p")
    result = cli("add", "other", "--id", "p")
    assert result.code == 1 and "already stored" in _one_error_line(result.err)


def test_unopenable_store_is_an_error(run: Cli, tmp_path: Path) -> None:
    result = run("--db", str(tmp_path), "stats")  # a directory, not a database
    assert result.code == 1
    _one_error_line(result.err)


@pytest.mark.parametrize(
    "argv",
    [["recall"], ["recall", "x", "-k", "many"], [], ["nope"], ["add", "x", "--type", "idea"]],
)
def test_usage_errors_keep_status_2(run: Cli, argv: list[str]) -> None:
    result = run(*argv)
    assert result.code == 2 and "usage:" in result.err


# ---------------------------------------------------------------------------- help
def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    return dict(actions[0].choices)


def test_every_subcommand_help_has_an_example(run: Cli) -> None:
    commands = _subcommands()
    assert {"add", "recall", "chat", "import", "export", "delete", "stats", "demo"} <= set(commands)
    assert {"capture", "forget", "history", "bench"} <= set(commands)
    for name, parser in commands.items():
        assert "Example:" in parser.format_help(), name
        result = run(name, "--help")
        opens_a_store = name != "bench"  # benchmarks build their own stores
        assert result.code == 0 and "Example:" in result.out, name
        assert ("--db" in result.out) == opens_a_store, name
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for sub_name, sub in nested[0].choices.items() if nested else ():
            assert "Example:" in sub.format_help(), f"{name} {sub_name}"


def test_top_level_help_lists_every_subcommand(run: Cli) -> None:
    result = run("--help")
    assert result.code == 0
    for name in _subcommands():
        assert name in result.out


# ---------------------------------------------------------------------------- demo
def test_demo_prints_every_turn_and_is_identical_across_runs(run: Cli, tmp_path: Path) -> None:
    unused = tmp_path / "unused.db"
    first = run("--db", str(unused), "demo")
    second = run("demo")
    assert first.code == 0 and first.err == ""
    assert first.out == second.out
    assert not unused.exists()
    for scenario in SESSIONS:
        for number, turn in enumerate(scenario.turns, start=1):
            assert f"turn {number}: {turn.query}" in first.out
            assert turn.expected in first.out
    assert "continuous recall" in first.out.lower()


@pytest.mark.parametrize("scenario", SESSIONS, ids=[s.session_id for s in SESSIONS])
def test_demo_turns_rank_their_intended_memory_first(scenario: Scenario) -> None:
    assert scenario in SESSIONS
    with build_store() as cm:
        for target in SESSIONS:
            results = play(cm, target, io.StringIO())
            if target is scenario:
                got = [r.memory_ids[0] if r.memory_ids else None for r in results]
                assert got == [turn.expected for turn in target.turns]


# ---------------------------------------------------------------------------- chat
def test_chat_with_piped_stdin(cli: Cli, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(cli)
    script = [
        "why do orders time out?",
        "+ the staging API uses port 9001",
        "what command did we run afterwards?",
        "/reset",
        "what command did we run afterwards?",
        "+ ",
        "/quit",
        "which port does the API use?",
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(script) + "\n"))
    result = cli("chat", "-k", "5")
    assert result.code == 0
    out = result.out
    assert "> " not in out.replace("turn", "")  # no prompt when stdin is not a terminal
    assert "turn 1: why do orders time out?" in out
    assert "added m-" in out
    turn2 = out.split("turn 2: what command did we run afterwards?")[1].split("session reset")[0]
    assert "carried over:" in turn2 and "redis" in turn2
    assert "fix" in turn2 and "session " in turn2 and "why:" in turn2
    after_reset = out.split("session reset")[1]
    assert "turn 1: what command did we run afterwards?" in after_reset
    assert "(no memories recalled)" in after_reset  # the carried cues are gone
    assert "which port" not in out  # nothing after /quit runs
    assert _one_error_line(result.err).endswith("non-empty text")
    assert "the staging API uses port 9001" in [r["content"] for r in _records(db)]


def test_chat_prompts_on_a_terminal_and_ends_at_eof(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    _seed(cli)
    monkeypatch.setattr(sys, "stdin", Tty("which port does the api use?\n"))
    result = cli("chat")
    assert result.code == 0
    assert result.out.startswith("> turn 1: which port")
    assert result.out.rstrip().endswith(">")


def test_chat_session_resumes_and_default_session_starts_fresh(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(cli)
    cli("recall", "why do orders time out?", "--session", "s1", "-k", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("what command did we run afterwards?\n"))
    resumed = cli("chat", "--session", "s1")
    assert "turn 2:" in resumed.out and "fix" in resumed.out
    for _ in range(2):
        monkeypatch.setattr(sys, "stdin", io.StringIO("what command did we run afterwards?\n"))
        fresh = cli("chat")
        assert "turn 1:" in fresh.out and "(no memories recalled)" in fresh.out


# ---------------------------------------------------------------------------- real processes
def test_python_dash_m_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cuemap_integrations", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert "usage: cuemap" in proc.stdout and "Example:" in proc.stdout
    assert proc.stderr == ""


def test_console_script(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "cuemap"
    env = {**os.environ, "CUEMAP_DB": str(tmp_path / "env.db"), "PYTHONIOENCODING": "utf-8"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(exe), *argv], capture_output=True, text=True, env=env, timeout=60
        )

    assert run("add", "订单超时是因为 Redis 缓存过期", "--id", "zh").returncode == 0
    recalled = run("recall", "订单为什么超时")
    assert recalled.returncode == 0 and "zh" in recalled.stdout and "订单超时" in recalled.stdout
    failed = run("delete", "nope")
    assert failed.returncode == 1 and failed.stdout == ""
    _one_error_line(failed.stderr)
    assert run("recall").returncode == 2
