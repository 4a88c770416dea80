"""The brake in a LangChain v1 agent: agent middleware around every tool call.

Needs ``pip install 'loop-brake-cli[langchain]'`` (``langchain`` 1.x)::

    from langchain.agents import create_agent
    from loop_brake_cli.integrations.langchain import LoopBrakeMiddleware

    brake = LoopBrakeMiddleware(max_repeats=3)
    agent = create_agent(model, tools, middleware=[brake], checkpointer=...)
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}})

``wrap_tool_call``/``awrap_tool_call`` see each call the model made before the
tool runs. A denied call's tool never runs: the model gets a ``ToolMessage``
with the core's denial text and ``status="error"``, answering its tool call
id, as LangChain reports a failed tool; the denial as data (``code``,
``count``, ``maxRepeats``, ``hashPrefix``) is the message's ``artifact``,
which is not sent to the model.

The session is the LangGraph thread (``configurable.thread_id``); a run
without one counts in ``"default"``, as the core does. The tool call's id is
the call id, so a retry middleware outside this one that runs the same call
again is not counted twice. ``middleware.brake`` is the ``LoopBrake``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from ..brake import LoopBrake
from ..verdicts import Verdict
from ._denial import denial_fields
from ._session import make_brake

__all__ = ["LoopBrakeMiddleware", "thread_session_key"]


def thread_session_key(request: Any) -> str | None:
    """The LangGraph thread id of a tool call request, or None outside a thread."""
    config = getattr(getattr(request, "runtime", None), "config", None) or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


class LoopBrakeMiddleware(AgentMiddleware):
    """Deny the ``max_repeats``-th identical tool call in a row of a thread."""

    def __init__(
        self,
        brake: LoopBrake | None = None,
        *,
        max_repeats: object = None,
        session_key: Callable[[Any], str | None] = thread_session_key,
    ) -> None:
        super().__init__()
        self.brake = make_brake(brake, max_repeats)
        self.session_key = session_key

    def _denial(self, request: Any) -> ToolMessage | None:
        call = request.tool_call
        verdict: Verdict = self.brake.check(
            call["name"],
            call.get("args"),
            session_id=self.session_key(request),
            call_id=call.get("id"),
        )
        if not verdict.denied:
            return None
        return ToolMessage(
            content=verdict.message,
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error",
            artifact=denial_fields(verdict),
        )

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        denial = self._denial(request)
        return handler(request) if denial is None else denial

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        denial = self._denial(request)
        return await handler(request) if denial is None else denial
