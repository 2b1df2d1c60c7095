"""Coding-agent integration: ``ssa install``/``ssa uninstall`` and the ``ssa mcp`` server.

Nothing here is imported by the library's core or by ``ssa hook``: the
command handlers import these modules lazily.
"""
