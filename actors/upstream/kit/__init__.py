"""What every upstream tool's test-kit builder shares: the clock, the turns, JSONL appends.

Each source's builder of its real on-disk shapes is ``actors.upstream.<source>.kit``
(pure file writers: plain files and SQLite stores; no actors, no signal log),
re-exported by :mod:`actors.testing` under its public names and used by the
source's sample writer (``ssa demo``). They live in the upstream layer so a
source module can name its writer; they may import only the standard library,
msgspec, APSW and ``actors.upstream``.
"""
