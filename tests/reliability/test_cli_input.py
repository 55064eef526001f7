"""Hostile input through the ``cuemap`` command line, in-process (``main(argv)``) and in a few real
subprocesses: every outcome is an exit status with a one-line error, and a refused command leaves
the store as it was.

``cuemap import`` decision (documented in the README): every bad line is reported as
``FILE:LINE: reason``; ``--on-error abort`` (the default) then imports nothing, ``--on-error skip``
imports all the good lines in one transaction.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuemap_integrations import CueMap
from cuemap_integrations.cli import main

from .test_bad_input import texts

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def cli(db: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--db", str(db), *argv])
    return code, out.getvalue(), err.getvalue()


def exported(db: Path) -> list[dict[str, object]]:
    with CueMap(db) as cm:
        return [m.to_dict() for m in cm.memories()]


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CUEMAP_DB", raising=False)
    path = tmp_path / "cli.db"
    assert cli(path, "add", "The API uses port 8001", "--id", "port")[0] == 0
    return path


def _refused_cleanly(code: int, err: str) -> bool:
    """Status 1 with ``cuemap: ...`` lines, or argparse's usage error (status 2, e.g. a value
    that starts with "-"); never a traceback."""
    if "Traceback" in err:
        return False
    if code == 2:
        return "usage:" in err
    return code == 1 and err.endswith("\n") and err.startswith("cuemap")


@SETTINGS
@given(text=texts, option=st.sampled_from(["--id", "--cue", "--tag", "--namespace", "--source"]),
       value=texts, k=st.integers(-(2**40), 2**40))  # fmt: skip
def test_add_and_recall(db: Path, text: str, option: str, value: str, k: int) -> None:
    for argv in (["add", text], ["add", "a valid text", option, value]):
        before = exported(db)
        code, _, err = cli(db, *argv)
        assert code == 0 or (_refused_cleanly(code, err) and exported(db) == before)
    for argv in (
        ["recall", text],
        ["recall", "port", "-k", str(k), "--json"],
        ["recall", "port", "--session", value],
        ["recall", "port", "--namespace", value],
    ):
        before = exported(db)
        code, out, err = cli(db, *argv)
        assert code == 0 or _refused_cleanly(code, err)
        if "-k" in argv:
            assert (code == 0) == (1 <= k <= 10_000)
        if code == 0 and "--json" in argv:
            document = json.loads(out)
            assert document["query"] == "port" and document["hits"]  # "port" is always stored


GOOD = "good"
lines = st.one_of(
    st.tuples(st.just(GOOD), texts),  # an object line: good unless its content is refused
    st.binary(max_size=12).map(lambda b: ("raw", b)),
    st.sampled_from([b"{bad json", b"[1, 2]", b'"text"', b"\xff\xfe{}", b'{"content": 5}',
                     b'{"conten": "typo"}', b"null"]).map(lambda b: ("raw", b)),
)  # fmt: skip


def _encode(number: int, line: tuple[str, object]) -> bytes:
    kind, value = line
    if kind == GOOD:  # ensure_ascii escapes lone surrogates as \ud800: valid UTF-8, bad content
        return json.dumps({"content": value, "memory_id": f"line{number}"}).encode()
    assert isinstance(value, bytes)
    return value.replace(b"\n", b" ").replace(b"\r", b" ")


@SETTINGS
@given(entries=st.lists(lines, min_size=1, max_size=8), mode=st.sampled_from(["abort", "skip"]))
def test_import_reports_bad_lines_and_imports_all_or_the_good_ones(
    db: Path, tmp_path: Path, entries: list[tuple[str, object]], mode: str
) -> None:
    data = [_encode(n, line) for n, line in enumerate(entries, start=1)]
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(data) + b"\n")
    before = exported(db)
    code, _, err = cli(db, "import", str(source), "--on-error", mode)
    reported = {int(line.split(":")[2]) for line in err.splitlines() if f"{source}:" in line}
    for number, (kind, _) in enumerate(entries, start=1):
        if kind != GOOD and data[number - 1].strip():
            assert number in reported  # every malformed line is named by its number
    good = {
        f"line{n}"
        for n, (kind, _) in enumerate(entries, start=1)
        if kind == GOOD and n not in reported
    }
    after = {m["memory_id"] for m in exported(db)} - {m["memory_id"] for m in before}
    if reported and (mode == "abort" or not good):
        assert _refused_cleanly(code, err) and exported(db) == before  # nothing imported
    else:
        assert code == 0 and after == good


def _cuemap(db: Path, *argv: bytes | str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "CUEMAP_DB"}
    return subprocess.run(
        [sys.executable, "-m", "cuemap_integrations", "--db", str(db), *argv],
        capture_output=True, env={**env, "PYTHONIOENCODING": "utf-8"}, check=False,
    )  # fmt: skip


def test_real_processes_refuse_invalid_utf8_with_one_line(db: Path, tmp_path: Path) -> None:
    before = exported(db)
    added = _cuemap(db, "add", b"caf\xe9 latin-1 bytes")  # argv arrives with lone surrogates
    assert added.returncode == 1 and b"valid Unicode" in added.stderr
    assert added.stderr.count(b"\n") == 1
    bad_file = tmp_path / "latin1.jsonl"
    bad_file.write_bytes(b'{"content": "ok"}\n{"content": "caf\xe9"}\n')
    imported = _cuemap(db, "import", str(bad_file))
    assert imported.returncode == 1 and b"latin1.jsonl:2: invalid UTF-8" in imported.stderr
    assert exported(db) == before
    recalled = _cuemap(db, "recall", b"port \xff", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)["hits"][0]["memory"]["memory_id"] == "port"
