"""The agents whose pre-tool hook ``loop-brake hook`` speaks: one module each, listed here.

Each module holds one vendor's hook contract, its documentation with the URLs,
and the same small interface (the hook, ``hook install`` and the hook-log
reader ``formats/hook_log.py`` use nothing else):

* ``NAME``: the ``--agent`` value;
* ``EVENTS``: its pre-tool event names; ``ALL_EVENTS``: every hook event name it
  sends (what a log of its hook inputs can hold);
* ``matches(payload) -> bool``: detection, from fields only that agent sends;
* ``RESULTS``: its post-tool events and the field holding the result;
* ``USER_TURNS``: its events that say the user spoke (a prompt was submitted),
  read as ``UserTurn`` records (a policy's ``reset_on_user_turn``);
* ``decode(payload, line=None) -> ToolCall | BadRecord | ToolResult | None``:
  the call of one hook input, the result of a post-tool event, or the user turn
  of a user-turn event (None: any other event, or a post-tool or user-turn event
  without a readable result or session), with the edge
  rules of ``wire.fields`` (see ``_common``);
* ``deny_output(message) -> dict``: the documented deny object;
* ``stop_output(message) -> dict``: the answer to a policy stop: the agent's own
  stop form where its hook protocol has one (``STOPS`` True), else the denial;
* ``warn_output(message) -> dict | None``: the answer to an allowed call a
  policy's ``warn_at`` warns, in the agent's documented field that lets the call
  go on through its usual permission flow, or None where the protocol has none;
* ``notice_output(message) -> dict | None``: the answer that tells the user, once
  per session, that the brake failed open (a field shown to the user, no
  decision), or None where the protocol has none (``hook/notice.py``);
* ``INSTALL``: an ``Install`` (settings file, event key, matcher, the result and
  user-turn events added under a policy that needs them), or None with
  the reason in ``NO_INSTALL``.

Adding an agent is one module and one line in ``AGENTS``; the registry test
(tests/test_agents_registry.py) fails until it has fixtures. This package is
imported before every tool call an agent makes: no click, rich or formats.
"""

from __future__ import annotations

from types import ModuleType

from . import claude_code, codex, cursor, gemini
from ._common import Install, event_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "AGENTS",
    "Install",
    "UnknownAgentError",
    "detect",
    "event_of",
    "get",
    "installable",
    "names",
]

# Detection order: the most specific first; claude-code matches every payload.
AGENTS: tuple[ModuleType, ...] = (cursor, gemini, codex, claude_code)


class UnknownAgentError(ValueError):
    """An agent name not in the registry; the message lists the known ones."""


def names() -> list[str]:
    """Every agent's name, sorted (for help texts and choices)."""
    return sorted(agent.NAME for agent in AGENTS)


def installable() -> list[str]:
    """The agents ``hook install`` can write a settings entry for, sorted."""
    return sorted(agent.NAME for agent in AGENTS if agent.INSTALL is not None)


def get(name: str) -> ModuleType:
    for agent in AGENTS:
        if agent.NAME == name:
            return agent
    raise UnknownAgentError(f"unknown agent {name!r}; known agents: {', '.join(names())}")


def detect(payload: dict[str, Any]) -> ModuleType:
    """The agent that sent ``payload`` (a JSON object), Claude Code if none claims it."""
    for agent in AGENTS:
        if agent.matches(payload):
            return agent
    return claude_code
