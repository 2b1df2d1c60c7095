"""Scripted answers a fake model server gives to a tool's main-conversation requests.

Answers are API-neutral; each server (:mod:`tests.harness.models`) renders
them in its wire format. A tool call names one of the tools the request
offered (the server checks the name against the request's tool list and
answers with a :class:`Fail` of status 400 when it is not there, so a wrong
name shows up as an error in the tool's screen and in ``server.problems``).
The tool-specific calls (a shell command, a sub-agent) are built by each
tool's profile, e.g. ``ClaudeCode.shell("ls")``, since every tool names its
tools differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "Fail", "Text", "ToolUse"]


@dataclass(frozen=True)
class Text:
    """A text reply.

    Attributes:
        text: what the model says.
        delay_s: seconds the server waits before it sends the response headers.
        chunk_delay_s: seconds between streamed chunks (one word each), to keep
            the tool busy for a while (e.g. to interrupt it).
    """

    text: str
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0


@dataclass(frozen=True)
class ToolUse:
    """A tool call (the model asks the tool to run one of its tools).

    Attributes:
        name: the tool's name exactly as the request's tool list has it
            (``Bash``, ``exec_command``, ``mcp__ssa__session_status``...).
        arguments: the call's JSON arguments.
        text: optional text said before the call.
        delay_s: seconds before the response starts.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    text: str = ""
    delay_s: float = 0.0


@dataclass(frozen=True)
class Fail:
    """An HTTP error answer.

    The servers send it with ``x-should-retry: false``; tools still retry 429
    and 5xx answers on their own, each retry taking the next scripted answer (or
    the default). Claude Code 2.1.328 also retries a 400 once, without its
    newest ``anthropic-beta`` value (it takes the 400 for an unsupported beta);
    a 403 it shows at once ("API Error: 403 ..."), without a retry.

    Attributes:
        status: the HTTP status.
        message: the error message in the API's error body.
        delay_s: seconds before the answer.
    """

    status: int = 400
    message: str = "scripted failure"
    delay_s: float = 0.0


Answer = Text | ToolUse | Fail
"""One scripted answer."""
