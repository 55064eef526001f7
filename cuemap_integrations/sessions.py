"""Where recall sessions keep their state: the memory store (default) or Redis (extra ``[redis]``).

A session's state is small JSON (turn count, the last turns' carried cues, ids shown). Keeping it
outside the process lets a conversation move between app instances: instance B resumes by id
what instance A started. Redis suits many short-lived sessions; the memory store needs nothing
more to run.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from .errors import StoreError, ValidationError
from .records import JSONValue
from .store import SessionStore, Store

__all__ = ["RedisSessions", "open_sessions"]


class RedisSessions:
    """Session state in Redis: one hash per namespace (``<prefix><namespace>``), a field per
    session id, the state as JSON.

    Args:
        url: ``redis://host:port/db`` (or ``rediss://``).
        prefix: the key prefix, so several apps can share one Redis database.

    Raises:
        StoreError: Redis is unreachable.
        ImportError: redis-py is not installed (extra ``[redis]``).
    """

    def __init__(self, url: str, *, prefix: str = "cuemap:sessions:") -> None:
        try:
            import redis
        except ImportError:
            raise ImportError(
                "Redis sessions need redis-py: pip install 'cuemap-integrations[redis]'"
            ) from None
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError,)
        self.url, self.prefix = url, prefix
        self._client: Any = redis.Redis.from_url(url)
        self._call("ping")

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._client, method)(*args)
        except self._errors as exc:
            raise StoreError(f"Redis sessions {self.url!r}: {exc}") from None

    def get_session(self, namespace: str, session_id: str) -> dict[str, JSONValue] | None:
        """The stored state of a recall session, or None."""
        raw = self._call("hget", self.prefix + namespace, session_id)
        return None if raw is None else dict(json.loads(raw)["state"])

    def put_session(
        self, namespace: str, session_id: str, state: dict[str, JSONValue], when: datetime
    ) -> None:
        """Store the state of a recall session (insert or replace)."""
        value = json.dumps({"state": state, "updated_at": when.isoformat()}, ensure_ascii=False)
        self._call("hset", self.prefix + namespace, session_id, value)

    def delete_session(self, namespace: str, session_id: str) -> None:
        """Forget a recall session's state."""
        self._call("hdel", self.prefix + namespace, session_id)

    def delete_namespace_sessions(self, namespace: str) -> int:
        """Forget every recall session of a namespace; return how many there were."""
        count = int(self._call("hlen", self.prefix + namespace))
        self._call("delete", self.prefix + namespace)
        return count

    def count_sessions(self) -> int:
        """How many recall sessions are stored under this prefix."""
        pattern = self.prefix.replace("*", r"\*") + "*"
        try:  # SCAN, not KEYS: never blocks a shared Redis
            keys = list(self._client.scan_iter(match=pattern, count=500))
        except self._errors as exc:
            raise StoreError(f"Redis sessions {self.url!r}: {exc}") from None
        return sum(int(self._call("hlen", key)) for key in keys)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


def open_sessions(spec: str | SessionStore | None, store: Store) -> SessionStore:
    """The session backend for ``CueMap(sessions=...)``: ``None`` keeps sessions in ``store``;
    a ``redis://`` URL uses :class:`RedisSessions`; any :class:`SessionStore` is used as is.

    Raises:
        ValidationError: anything else.
    """
    if spec is None:
        return store
    if isinstance(spec, str) and spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisSessions(spec)
    if not isinstance(spec, str) and all(
        callable(getattr(spec, name, None))
        for name in ("get_session", "put_session", "delete_session", "count_sessions")
    ):
        return spec
    raise ValidationError("sessions", spec, "None, a redis:// URL or a SessionStore")
