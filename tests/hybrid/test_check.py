"""`CueMap.check()` includes the dense index: vectors and memories must agree."""

from __future__ import annotations

from cuemap_integrations import CueMap


def test_dense_index_agrees_with_the_store_and_damage_is_reported(hcm: CueMap) -> None:
    hcm.add("The API uses port 8001", memory_id="port")
    hcm.add("Deploys happen on Fridays", memory_id="deploy")
    hcm.delete("deploy")
    assert hcm.check() == []
    index = hcm.extension.index  # type: ignore[union-attr]
    with index._lock:
        index._digests.pop(("default", "port"))  # a vector the mirror forgot about
    problems = hcm.check()
    assert any("port" in p and "no vector" in p for p in problems)
