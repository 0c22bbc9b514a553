"""The sandbox's SQL port (Druid's 8082): the Avatica JSON endpoint and Druid's SQL HTTP API over DuckDB.

* :mod:`.app` — the ASGI app and its limits; :mod:`.avatica` and :mod:`.druid_api` — the two protocols;
* :mod:`.engine` — runs a statement on the caller's DuckDB database under a :class:`~.engine.Deadline`;
* :mod:`.dialect` — Druid SQL in, DuckDB SQL out; :mod:`.access` — what a workgroup's SQL may touch;
* :mod:`.errors` — the SQL errors both protocols render; :mod:`.rows` — columnar JSON encoding of rows.
"""
