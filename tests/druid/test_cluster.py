"""druid/cluster.py: the jar lock is checked, and the running broker is the Druid the lock names."""

from __future__ import annotations

import json
import re
import urllib.request

from _cluster import ROOT, load

cluster = load()


def test_the_lock_pins_every_jar_of_druid_33():
    pinned = cluster._read_lock()
    assert len(pinned) > 150
    assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in pinned.values())
    for jar in ("druid-services-33.0.0.jar", "druid-sql-33.0.0.jar", "druid-datasketches-33.0.0.jar"):
        assert jar in pinned
    assert not any("sigar" in name for name in pinned)  # only in a repository this machine cannot reach
    assert "<druid.version>33.0.0</druid.version>" in (ROOT / "druid" / "pom.xml").read_text()


def test_a_changed_missing_or_extra_jar_is_named():
    pinned = {"a.jar": "1" * 64, "b.jar": "2" * 64}
    found = {"a.jar": "3" * 64, "c.jar": "4" * 64}
    assert cluster._mismatch(found, pinned) == [
        "missing b.jar",
        "not in the lock: c.jar",
        "checksum differs: a.jar",
    ]
    assert cluster._mismatch(dict(pinned), pinned) == []


def test_the_broker_is_druid_33_on_loopback(druid_cluster):
    assert druid_cluster.broker.startswith("http://127.0.0.1:")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(druid_cluster.broker + "/status", timeout=30) as answer:
        status = json.loads(answer.read())
    assert status["version"] == "33.0.0"


def test_published_already_leaves_every_connection_free(druid_cluster, druid_published, sandbox_store):
    """``published_already`` (which the stand-in's ``--druid`` start asks first, over every workgroup, on a
    Druid the differential suite has partly filled) leaves each workgroup's connection free for the reads
    ``publish_store`` makes next: an unfinished result of its lookup counts refused them in CI."""
    from pm_sandbox.druid_publish import published_already

    published_already(sandbox_store, broker_url=druid_cluster.broker)  # True or False: both walk the lookups
    assert any(project.lookups for wg in sandbox_store.workgroups() for project in wg.projects)
    for wg in sandbox_store.workgroups():
        assert sandbox_store.database(wg.id).sql("SELECT 1").fetchall() == [(1,)]
