"""What a session recorded on Windows holds, for the builders' ``windows=True``.

A tool run on Windows records its working directory with a drive letter and
backslashes; JSONL writers in Node and Rust end lines with ``\\n`` there too
(they write what they are given), while Python's text-mode files (Aider's
chat history) write ``\\r\\n``. Data only.
"""

from __future__ import annotations

from typing import Final

__all__ = ["WINDOWS_CWD", "WINDOWS_FILE"]

WINDOWS_CWD: Final = "C:\\Users\\user\\work"
"""The working directory of a session recorded on Windows."""

WINDOWS_FILE: Final = "C:\\Users\\user\\work\\src\\app.py"
"""A file in it, as tools there name it."""
