"""The SQL of every process-mining answer, as pure functions of (schema, filters, arguments).

Each builder returns the :class:`~._base.Statement` (SQL text, ``?`` parameters in text order, and its facts)
that an answer runs, and does nothing else: no query, no pandas. The answer functions run the statements
through the log's runner (:mod:`pm_notebook.mining._runner`) and shape their results. One module per family:

- :mod:`._base`: ``Statement``, the quantile function, ISO periods, START/END, the one order of a case's
  tasks and the one "group per case, then aggregate" statement (``per_case``);
- :mod:`.stats`: the per-activity (node) and per-transition (edge) statistics, shared by ``activities()``,
  ``transitions()``, ``bottlenecks()`` and ``process_map()``;
- :mod:`.cases`: answers over the cases table (``summary``, ``throughput``, ``distribution``,
  ``cases_over_time``, the case count);
- :mod:`.resources`, :mod:`.timing`, :mod:`.controlflow`: the organisational, time and control-flow
  perspectives; :mod:`.drivers`: the per-value counts of ``drivers()``;
- :mod:`.variants`, :mod:`.rework`, :mod:`.conformance`, :mod:`.events`: one answer (family) each.

Only Druid SQL is written: no DuckDB-isms; non-aggregating queries ordered by ``__time`` only; window
functions only in the statements marked ``windowing`` (Druid's broker inlines their input, so
``maxSubqueryRows`` applies to them); joins only as ``IN (subquery)`` semi-joins on ``caseid`` (see
:class:`~pm_notebook.mining._filters.Filters`) and as a ``CROSS JOIN`` of a one-row aggregate beside an
answer's rows.
"""
