"""PostgreSQL specifics: several instances (objects and processes) on one database, the change
log, sessions that move between instances (in the database or in Redis), and the store's errors.

The rest of the core suite runs on PostgreSQL too, through the ``cm`` and ``location`` fixtures.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from cuemap_integrations import CueMap, StoreError, ValidationError
from cuemap_integrations.errors import DuplicateIdError
from cuemap_integrations.store import SharedStore

from ..conftest import ORDER_TIMEOUT_EN, FakeClock, load

REDIS_URL = os.environ.get("CUEMAP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def pair(pg_url: str, clock: FakeClock) -> Iterator[tuple[CueMap, CueMap]]:
    """Two instances on one database, as two app servers would have."""
    with CueMap(pg_url, clock=clock) as a, CueMap(pg_url, clock=clock) as b:
        yield a, b


def ids(cm: CueMap, query: str, k: int = 5) -> list[str]:
    return cm.recall(query, k=k).memory_ids


def test_add_update_delete_on_one_instance_are_recalled_by_the_other(pair) -> None:
    a, b = pair
    assert ids(b, "which port does the api use?") == []
    a.add("The API uses port 8001", memory_id="port", type="convention")
    assert ids(b, "which port does the api use?") == ["port"]
    a.update("port", content="The gateway listens on 9443")
    assert ids(b, "which port does the api use?") == []  # old words are gone from B's index
    assert ids(b, "gateway 9443") == ["port"]
    assert b.get("port").content == "The gateway listens on 9443"
    a.delete("port")
    assert ids(b, "gateway 9443") == [] and "port" not in b
    assert a.check() == [] and b.check() == []


def test_supersede_conflict_and_forget_propagate(pair) -> None:
    a, b = pair
    a.add("Deploys go out on Tuesdays", key="deploy-day", memory_id="v1", type="convention")
    b.add("Deploys go out on Thursdays", key="deploy-day", memory_id="v2", type="convention")
    assert ids(a, "when do deploys go out?") == ["v2"]  # B's write superseded A's memory
    assert a.get("v1").superseded_by == "v2"
    assert [r.memory_id for r in a.history("v2")] == ["v1", "v2"]
    a.add("The orders API uses POST", type="fact", memory_id="post")
    a.add("The orders API uses GET", type="fact", memory_id="get")
    hits = b.recall("orders api", k=2)
    assert {hits[0].memory_id, *hits[0].conflicts} == {"post", "get"} and hits.notes
    b.delete("get")
    assert a.recall("orders api", k=2)[0].conflicts == () and not a.recall("orders api").notes
    a.forget(namespace="default", everything=True)
    assert len(b.memories()) == 0 and b.check() == []


def test_writes_are_planned_against_every_instances_memories(pair) -> None:
    a, b = pair
    first = a.add("Lunch order goes out at noon")
    again = b.add("Lunch order goes out at noon")  # a duplicate, though B never saw it
    assert again.memory_id == first.memory_id and len(b.memories()) == 1
    a.add("The API uses port 8001", memory_id="port")
    with pytest.raises(DuplicateIdError):
        b.add("Another text", memory_id="port")
    assert b.get("port").content == "The API uses port 8001"


def test_interval_mode_syncs_lazily_and_sync_forces_it(pg_url, clock, monkeypatch) -> None:
    now = [100.0]
    fake_time = SimpleNamespace(monotonic=lambda: now[0])
    monkeypatch.setattr("cuemap_integrations.sync.time", fake_time)
    with (
        CueMap(pg_url, clock=clock) as a,
        CueMap(pg_url, clock=clock, sync="interval", sync_interval=30) as b,
    ):
        assert ids(b, "port 8001") == []  # B's first sync is now
        a.add("The API uses port 8001", memory_id="port")
        now[0] += 29
        assert ids(b, "port 8001") == []  # within the interval: not synced yet
        now[0] += 1
        assert ids(b, "port 8001") == ["port"]
        a.add("Never change the DB schema without a backup", memory_id="schema")
        assert b.sync() == 1 and ids(b, "schema backup") == ["schema"]
        assert b.sync() == 0


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"sync": "sometimes"}, "sync"),
        ({"sync": True}, "sync"),
        ({"sync_interval": 0}, "sync_interval"),
        ({"sync_interval": float("nan")}, "sync_interval"),
        ({"sessions": "mysql://x"}, "sessions"),
        ({"sessions": 42}, "sessions"),
    ],
)
def test_bad_sync_and_session_options_are_refused(options, field) -> None:
    with pytest.raises(ValidationError) as info:
        CueMap(**options)
    assert info.value.field == field


def test_session_moves_between_instances(pair) -> None:
    a, b = pair
    load(a, ORDER_TIMEOUT_EN)
    assert a.session("chat-9").recall("why were orders timing out?", k=1).memory_ids == ["cause"]
    resumed = b.session("chat-9")
    assert resumed.turn == 1 and "redis" in dict(resumed.carried_cues())
    assert resumed.recall("how did we fix it?", k=1).memory_ids == ["fix"]
    assert a.session("chat-9").turn == 2 and a.stats().sessions == 1


def _redis_or_skip() -> None:
    redis = pytest.importorskip("redis", reason="extra [redis] not installed")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        reason = f"Redis NOT TESTED: {REDIS_URL} unreachable ({exc})"
        if os.environ.get("CUEMAP_REQUIRE_REDIS") == "1":
            pytest.fail(f"{reason}; CUEMAP_REQUIRE_REDIS=1 requires it", pytrace=False)
        pytest.skip(reason)


def test_redis_sessions_move_between_instances(pg_url: str, clock: FakeClock) -> None:
    _redis_or_skip()
    from cuemap_integrations.sessions import RedisSessions

    prefix = f"cuemap-test:{uuid.uuid4().hex}:"
    with (
        CueMap(pg_url, clock=clock, sessions=RedisSessions(REDIS_URL, prefix=prefix)) as a,
        CueMap(pg_url, clock=clock, sessions=RedisSessions(REDIS_URL, prefix=prefix)) as b,
    ):
        load(a, ORDER_TIMEOUT_EN)
        a.session("chat-r").recall("why were orders timing out?", k=1)
        assert a._store.count_sessions() == 0  # the state went to Redis, not the database
        resumed = b.session("chat-r")
        assert resumed.turn == 1
        assert resumed.recall("how did we fix it?", k=1).memory_ids == ["fix"]
        assert b.stats().sessions == 1
        a.forget(namespace="default", everything=True)
        assert b.stats().sessions == 0 and b.session("chat-r").turn == 0


def test_redis_url_form_on_sqlite(clock: FakeClock) -> None:
    _redis_or_skip()
    namespace = f"ns-{uuid.uuid4().hex}"  # the default prefix: keep clear of other runs
    with CueMap(clock=clock, sessions=REDIS_URL) as cm:
        load(cm, ORDER_TIMEOUT_EN, namespace=namespace)
        session = cm.session("s", namespace=namespace)
        session.recall("orders timing out")
        assert cm.session("s", namespace=namespace).turn == 1
        session.reset()
        assert cm.session("s", namespace=namespace).turn == 0


def test_unreachable_redis_is_a_store_error() -> None:
    pytest.importorskip("redis", reason="extra [redis] not installed")
    with pytest.raises(StoreError, match="Redis sessions"):
        CueMap(sessions="redis://127.0.0.1:1/0")


_WRITER = textwrap.dedent(
    """
    import sys
    from cuemap_integrations import CueMap
    url, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with CueMap(url) as cm:
        for i in range(n):
            cm.add(f"{name} wrote note number {i} about topic{name}{i}", memory_id=f"{name}-{i}")
            if i % 5 == 4:
                cm.update(f"{name}-{i - 1}", content=f"{name} rewrote note {i - 1} as topicx{name}{i}")
                cm.delete(f"{name}-{i - 2}")
    print("ok")
    """
)


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_processes_write_at_once_and_a_reader_sees_every_acknowledged_write(pg_url) -> None:
    """Three processes add, update and delete while this one keeps syncing; afterwards its
    index equals a fresh load: no change was skipped (no gaps) or applied wrongly."""
    with CueMap(pg_url) as reader:
        procs = [_spawn(_WRITER, pg_url, name, "20") for name in ("p", "q", "r")]
        while any(p.poll() is None for p in procs):
            reader.recall("note number topic")
        for proc in procs:
            out, err = proc.communicate()
            assert proc.returncode == 0 and out.strip() == "ok", err
        reader.recall("note")
        with CueMap(pg_url) as fresh:
            expected = sorted(r.memory_id for r in fresh.memories())
        assert sorted(r.memory_id for r in reader.memories()) == expected
        assert len(expected) == 3 * (20 - 4)  # each writer deleted 4 of its 20
        assert ids(reader, "q rewrote note 13 topicxq14", k=1) == ["q-13"]
        assert reader.get("r-13").content.startswith("r rewrote")
        assert reader.check() == []


def test_threads_of_two_instances_write_at_once(pair) -> None:
    a, b = pair
    errors: list[BaseException] = []

    def write(cm: CueMap, name: str) -> None:
        try:
            for i in range(25):
                cm.add(f"{name} thread note {i}", memory_id=f"{name}{i}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(cm, n)) for cm, n in ((a, "a"), (b, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(a.memories()) == len(b.memories()) == 50
    assert a.check() == [] and b.check() == []


def test_two_processes_create_the_schema_at_once(pg_url) -> None:
    code = "import sys; from cuemap_integrations import CueMap; CueMap(sys.argv[1]).close()"
    procs = [_spawn(code, pg_url) for _ in range(4)]
    results = [(p.wait(), p.communicate()[1]) for p in procs]
    assert results == [(0, "")] * 4
    with CueMap(pg_url) as cm:
        assert cm.stats().schema_version == 1


def test_check_reports_rows_written_around_the_change_log(pg_url) -> None:
    with CueMap(pg_url) as cm:
        cm.add("The API uses port 8001", memory_id="port")
        store = cm._store
        assert isinstance(store, SharedStore)
        store._conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO memories (namespace, memory_id, content, type, created_at, updated_at, "
            "metadata, cue_origin) VALUES ('default', 'sneaky', 'x', 'note', now(), now(), "
            "'{}', 'derived')"
        )
        problems = cm.check()
    assert any("sneaky" in p and "change log" in p for p in problems)
    assert any("not indexed" in p and "sneaky" in p for p in problems)


def test_password_never_reaches_the_path_and_bad_servers_are_store_errors() -> None:
    pytest.importorskip("psycopg", reason="extra [postgres] not installed")
    url = "postgresql://someone:s3cret-pw@127.0.0.1:1/nowhere"
    with pytest.raises(StoreError) as info:
        CueMap(url)
    assert "s3cret-pw" not in str(info.value) and "someone:***@" in str(info.value)


def test_psycopg_is_imported_only_for_a_postgresql_url() -> None:
    code = textwrap.dedent(
        """
        import sys
        from cuemap_integrations import CueMap
        CueMap().close()
        assert "psycopg" not in sys.modules and "redis" not in sys.modules
        sys.modules["psycopg"] = None  # as if the extra were not installed
        try:
            CueMap("postgresql://postgres@127.0.0.1/test")
        except ImportError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "pip install 'cuemap-integrations[postgres]'" in out


def test_cuemap_check_command_on_postgresql(pg_url: str, capsys) -> None:
    from cuemap_integrations.cli import main

    assert main(["--db", pg_url, "add", "The API uses port 8001", "--id", "port"]) == 0
    assert main(["--db", pg_url, "check"]) == 0
    with CueMap(pg_url) as cm:
        cm._store._conn.execute(  # type: ignore[attr-defined]  # behind the store's back
            "INSERT INTO links (namespace, from_id, to_id, kind, created_at) "
            "VALUES ('default', 'port', 'ghost', 'conflict', now())"
        )
    capsys.readouterr()
    assert main(["--db", pg_url, "check"]) == 1
    assert "ghost" in capsys.readouterr().out


def test_a_session_object_held_across_turns_sees_the_other_instances_turns(pair) -> None:
    a, b = pair  # e.g. an adapter on A keeps its session object between requests
    load(a, [*ORDER_TIMEOUT_EN, ("login-fix", "Fixed the flaky login test by pinning it", "fact")])
    held = a.session("chat-5")
    held.recall("which port does the API use?", k=1)
    b.session("chat-5").recall("why were orders timing out?", k=1)
    assert held.recall("how did we fix it?", k=1).memory_ids == ["fix"]  # B's turn carried
    assert b.session("chat-5").turn == 3 and held.turn == 3


def test_the_change_log_keeps_one_entry_per_memory_and_a_lagging_instance_catches_up(pair) -> None:
    a, b = pair
    b.recall("warm")  # B's last sync is now; it reads nothing until the end
    a.add("The orders API uses POST", type="fact", memory_id="post")
    for n in range(5):
        a.update("post", content=f"The orders API uses POST version {n}")
    a.add("The orders API uses GET", type="fact", memory_id="get")  # a conflict link to "post"
    a.add("Short lived note", memory_id="gone")
    a.delete("gone")
    entries = b._store.changes_since(0)  # type: ignore[attr-defined]
    assert sorted(mid for _, _, mid, _ in entries) == ["get", "gone", "post"]
    hits = b.recall("orders api version 4", k=2)
    assert hits[0].memory.content.endswith("version 4") and hits[0].conflicts == ("get",)
    assert "gone" not in b and b.check() == []


@pytest.mark.parametrize("required", [False, True])
def test_an_unreachable_server_skips_loudly_or_fails_when_required(required: bool) -> None:
    env = {**os.environ, "CUEMAP_TEST_PG_URL": "postgresql://postgres@127.0.0.1:1/none"}
    env["CUEMAP_REQUIRE_PG"] = "1" if required else "0"
    test = "tests/core/test_lifecycle.py::test_conflict_links_survive_reopen_and_go_with_delete"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        capture_output=True, text=True, env=env, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    if required:
        assert done.returncode != 0 and "CUEMAP_REQUIRE_PG=1 requires it" in done.stdout
    else:
        assert done.returncode == 0 and "1 passed, 1 skipped" in done.stdout
        assert "POSTGRESQL BACKEND NOT TESTED" in done.stdout


def test_an_instance_reconnects_after_the_server_drops_its_connection(pair, pg_server) -> None:
    import psycopg

    a, b = pair
    a.add("The API uses port 8001", memory_id="port")
    with psycopg.connect(pg_server, autocommit=True) as admin:
        for cm in (a, b):  # as a server restart or an idle-timeout would
            pid = cm._store._conn.info.backend_pid  # type: ignore[attr-defined]
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    a.add("Never change the DB schema without a backup", memory_id="schema")
    assert ids(b, "schema backup") == ["schema"] and ids(b, "port 8001") == ["port"]
    assert a.check() == [] and b.check() == []


def test_a_refused_session_backend_closes_the_store(pg_url, monkeypatch) -> None:
    closed: list[str] = []
    from cuemap_integrations.pgstore import PostgresStore

    original = PostgresStore.close
    monkeypatch.setattr(PostgresStore, "close", lambda self: closed.append("x") or original(self))
    with pytest.raises(ValidationError):
        CueMap(pg_url, sessions="mysql://nope")
    assert closed == ["x"]
