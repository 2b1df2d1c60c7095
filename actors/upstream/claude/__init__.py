"""Claude Code as an upstream source: everything this project knows of its on-disk format.

:mod:`.source` is the light half (locations, discovery; the registry
:mod:`actors.upstream.sources` and ``ssa hook`` import it at every prompt);
:mod:`.reading` the heavy half, loaded on first use; the readers, decisions,
copies and the test kit's builder (:mod:`.kit`) sit beside them. Importing
this package loads none of its modules.
"""
