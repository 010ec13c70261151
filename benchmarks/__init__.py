"""The performance benchmark of calibrate (issue 8).

One entry point, ``python -m benchmarks.run`` (or ``make bench``), generates the
input with the simulator (cached under ``benchmarks/.cache/`` by size and seed),
then measures on the same files, in one run: the DuckDB floor, ``calibrate
ingest``, the naive pandas baseline, the analysis commands on the loaded store
and the threshold search against the peer baseline, and writes
``reports/benchmarks.md`` with a log-log figure beside it.

Modules
-------
run
    The orchestrator: measurement, tables, targets, figure.
inputs
    The cached simulated exports.
workers
    The steps that are not ``calibrate`` commands, run in their own process so
    each has its own peak memory: the floor, the naive baseline, the threshold
    searches.
power
    The power study of the threshold search (issue 14), ``python -m
    benchmarks.power``: calibrate's certified search against the oracle and
    the peer walk, cell by cell, into ``reports/power.md``.
regimes
    The generative regimes of the power study and of
    ``tests/test_search_validity.py``.
oracle
    The best configuration on the true model, and the peer procedures.
profile_ingest
    Time the ingest SQL pipeline statement by statement, optionally with an
    edited copy of the SQL, to measure a proposed optimisation before applying it.
"""
