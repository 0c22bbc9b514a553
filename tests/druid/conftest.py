"""A real Apache Druid 33.0.0 beside the stand-in, holding the same projects (the differential suite).

* ``druid_cluster`` (session, in ``tests/conftest.py``): the broker and coordinator URLs. ``PM_DRUID_URL``
  and ``PM_DRUID_COORDINATOR_URL`` name a running cluster (``make druid`` writes them to ``.druid/env``, which
  is read too); otherwise the session starts one with ``druid/cluster.py`` in its tmp folder and stops it at
  the end. Java and Maven are part of this machine kind; without them the module is skipped with the reason.
* ``druid_published`` (session): the fixture sandbox's demo workgroup (the same deterministic rows, rebuilt
  in-process as ``sandbox_store``) published to that Druid with :mod:`pm_sandbox.druid_publish`.
* ``druid_conn`` / ``standin_conn`` (session): pm_notebook connections to the Druid broker (no service in
  front: its SQL endpoints take no credentials) and to the stand-in's demo workgroup.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def druid_published(druid_cluster, sandbox_store):
    """Publish once per cluster: a cluster that already counts the same rows in every table and lookup (the
    data is deterministic: same seed, same project ids) is used as it is."""
    from pm_sandbox.druid_publish import publish_store, published_already

    if published_already(sandbox_store, broker_url=druid_cluster.broker, workgroups=["demo"]):
        return None
    return publish_store(
        sandbox_store,
        coordinator_url=druid_cluster.coordinator,
        broker_url=druid_cluster.broker,
        workgroups=["demo"],
    )


@pytest.fixture(scope="session")
def druid_conn(druid_cluster, druid_published):
    import pm_notebook

    conn = pm_notebook.connect(
        "http://127.0.0.1:9",
        "http://127.0.0.1:9/realms/none",
        "druid",
        "druid",
        f"jdbc:avatica:remote:url={druid_cluster.broker}/druid/v2/sql/avatica/",
        use_keyring=False,
    )
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def standin_conn(sandbox, connect_workgroup):
    conn = connect_workgroup(sandbox, "demo")
    yield conn
    conn.close()
