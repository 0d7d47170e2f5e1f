"""The project's benchmarks, run from a checkout (they are not part of the wheel).

    python -m benchmarks facts ...   lookups, audits, timelines, writes, ingestion (facts.py)
    python -m benchmarks decay ...   working memory: decay vs sliding window (decay.py)
    python -m benchmarks load ...    concurrent writers and readers, then the invariants (load.py)

What they measure and the figures measured here: README.md in this folder.
"""
