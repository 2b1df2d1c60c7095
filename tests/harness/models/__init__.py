"""Fake model servers on 127.0.0.1, one per API shape the coding agents speak.

* :func:`anthropic_server`: Anthropic Messages (Claude Code).
* :func:`responses_server`: OpenAI Responses (Codex).
* :func:`chat_server`: OpenAI Chat Completions (OpenCode, Pi, Qwen Code).
* :func:`chat_plain_server`: the same for a tool that offers no tools (Aider).
* :func:`gemini_server`: the Gemini API (Gemini CLI).

See :mod:`tests.harness.models._server` for recording, the scripted queue
and how requests are classified (``main`` versus ``side``).
"""

from __future__ import annotations

from tests.harness.models._server import DEFAULT_TEXT, FakeModelServer, ModelRequest
from tests.harness.models.anthropic import AnthropicMessages
from tests.harness.models.chat import MODEL_ID, OpenAIChat, OpenAIChatPlain
from tests.harness.models.gemini import GEMINI_MODEL, GeminiApi
from tests.harness.models.responses import OpenAIResponses

__all__ = ["DEFAULT_TEXT", "GEMINI_MODEL", "MODEL_ID", "FakeModelServer", "ModelRequest",
           "anthropic_server", "chat_plain_server", "chat_server", "gemini_server",
           "responses_server", "server_for"]


def anthropic_server() -> FakeModelServer:
    """A new (not started) Anthropic Messages server."""
    return FakeModelServer(AnthropicMessages())


def responses_server() -> FakeModelServer:
    """A new (not started) OpenAI Responses server."""
    return FakeModelServer(OpenAIResponses())


def chat_server() -> FakeModelServer:
    """A new (not started) OpenAI Chat Completions server."""
    return FakeModelServer(OpenAIChat())


def chat_plain_server() -> FakeModelServer:
    """A new (not started) Chat Completions server for a tool that offers no tools (Aider)."""
    return FakeModelServer(OpenAIChatPlain())


def gemini_server() -> FakeModelServer:
    """A new (not started) Gemini API server."""
    return FakeModelServer(GeminiApi())


def server_for(api: str) -> FakeModelServer:
    """A new (not started) server for ``api``.

    ``api``: ``anthropic``, ``responses``, ``chat``, ``chat-plain`` or ``gemini``.

    Raises:
        KeyError: an unknown API name.
    """
    factories = {"anthropic": anthropic_server, "responses": responses_server,
                 "chat": chat_server, "chat-plain": chat_plain_server,
                 "gemini": gemini_server}
    return factories[api]()
