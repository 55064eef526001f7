"""`cuemap capture`, `forget` and `history` through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuemap_integrations.cli import main

OPENAI = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_capture_file_redacts_dedupes_and_supersedes(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "m.db")
    chat = tmp_path / "chat.jsonl"
    lines = [
        {"role": "user", "content": "我们统一使用 8001 端口。"},
        {"role": "user", "content": f"Remember that the deploy token is {OPENAI}"},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "thanks, that works"},
        {"role": "user", "content": "From now on call me Sam."},
    ]
    chat.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")
    code, out, _ = run(capsys, "--db", db, "capture", str(chat), "--json")
    assert code == 0
    data = json.loads(out)
    assert len(data["records"]) == 3 and OPENAI not in out
    assert data["redactions"]["api_key"] == 1
    assert {r["type"] for r in data["records"]} == {"convention", "fact", "preference"}
    code, out, _ = run(capsys, "--db", db, "capture", str(chat))
    assert code == 0 and "captured 3" in out
    code, out, _ = run(capsys, "--db", db, "stats", "--json")
    assert json.loads(out)["memories"] == 3  # captured again: nothing stored twice
    chat.write_text(json.dumps({"role": "user", "content": "From now on call me Samantha."}) + "\n")
    run(capsys, "--db", db, "capture", str(chat))
    newest = json.loads(run(capsys, "--db", db, "recall", "call the user", "--json")[1])
    top = newest["hits"][0]["memory"]
    assert "Samantha" in top["content"]
    code, out, _ = run(capsys, "--db", db, "history", top["memory_id"])
    assert code == 0 and len(out.strip().splitlines()) == 2 and "superseded" in out


def test_capture_bad_line_is_reported_with_its_number(tmp_path: Path, capsys) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "we use port 8001"}\nnot json\n')
    code, _, err = run(capsys, "--db", str(tmp_path / "m.db"), "capture", str(chat))
    assert code == 1 and f"{chat}:2:" in err and err.startswith("cuemap: error:")


def test_forget_by_id_filter_and_everything(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "m.db")
    for text, kind in [("deploy on friday", "task"), ("we use port 8001", "convention")]:
        run(capsys, "--db", db, "add", text, "--type", kind)
    run(capsys, "--db", db, "-n", "b", "add", "other tenant")
    code, out, err = run(capsys, "--db", db, "forget", "--type", "task")
    assert code == 0 and "forgot 1" in err
    code, _, err = run(capsys, "--db", db, "forget")
    assert code == 1 and "everything=True" in err
    code, out, err = run(capsys, "--db", db, "-n", "b", "forget", "--everything")
    assert "forgot 1" in err
    assert json.loads(run(capsys, "--db", db, "stats", "--json")[1])["memories"] == 1


def test_check_command(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "m.db")
    run(capsys, "--db", db, "add", "we use port 8001")
    code, out, _ = run(capsys, "--db", db, "check", "--json")
    assert code == 0 and json.loads(out) == {"ok": True, "problems": []}
