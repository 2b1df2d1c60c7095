"""Writers of each upstream tool's real on-disk shapes, for the test kit and the samples.

Pure file writers (plain files and SQLite stores; no actors, no signal log):
the transcript builders :mod:`actors.testing` re-exports under its public
names, and what each source's sample writer (``ssa demo``) uses. They live
in the upstream layer so a source module can name its writer; they may
import only the standard library, msgspec, APSW and ``actors.upstream``.
"""
