"""The core never opens a socket: a whole store lifecycle runs with sockets disabled."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import socket, sys

    def refuse(*args, **kwargs):
        raise RuntimeError("network access attempted")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse
    socket.socket.sendto = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    try:  # the guard itself works
        socket.create_connection(("127.0.0.1", 9))
        sys.exit("guard failed")
    except RuntimeError:
        pass

    from cuemap_integrations import CueMap
    from cuemap_integrations.formatting import format_context
    with CueMap(sys.argv[1]) as cm:
        cm.add("The API uses port 8001", type="convention")
        cm.capture([{"role": "user", "content": "Remember that we deploy on Fridays."}], session_id="s")
        session = cm.session("s")
        session.recall("which port?")
        result = session.recall("and the deploy day?")
        print(format_context(result, budget_tokens=200, encoding="cl100k_base").tokens > 0)
        assert cm.check() == []
    """
)


def test_core_runs_with_sockets_disabled(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "m.db")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
