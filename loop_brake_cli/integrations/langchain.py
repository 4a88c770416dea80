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
which is not sent to the model. A policy's stop ends the run the way
LangChain's own limit middleware does (``exit_behavior="end"``): the stop's
``ToolMessage``, then a jump to the end with an ``AIMessage`` carrying the stop
message, so the model is not called again.

A call a policy's ``warn_at`` warns runs, and its ``ToolMessage`` reaches the
model with the warning added after the tool's output (a text block at the end
of a list content, or two line ends and the text after a string one); the
progress mode reads the tool's own output, before the warning.

The session is the LangGraph thread (``configurable.thread_id``); a run
without one is a session of its own (one ``invoke``/``stream``, from its
``before_agent`` to its ``after_agent``, which forgets it), so two requests of a
stateless server never share a streak. ``session_key=`` (a function of the
``ToolCallRequest``, returning a str, or None for the default) keys calls
yourself. The tool call's id is the call id while the call runs (from the verdict
to the tool's answer or exception): a model that numbers its calls ``call_0``
every turn has each turn's call counted, and a retry middleware outside this one
that runs a failed call again counts it again, as the tool runs again. Each tool's
``ToolMessage`` content feeds the policy's progress mode. ``middleware.brake``
is the ``LoopBrake``; its session table is bounded (``integrations._session``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from typing_extensions import NotRequired  # typing has it from 3.11 only

from ..core.brake import LoopBrake
from ..core.verdicts import Verdict
from ._session import BrakeOptions, SessionBrake, fresh_call_id
from .langgraph import answered, denial_message, thread_session_key, with_warning

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeMiddleware", "LoopBrakeState", "thread_session_key", "with_warning"]


class LoopBrakeState(AgentState):
    """The agent state the middleware adds: this run's session, and whether it stopped."""

    loop_brake_run: NotRequired[Annotated[str, PrivateStateAttr]]
    loop_brake_stop: NotRequired[Annotated[str | None, PrivateStateAttr]]


class LoopBrakeMiddleware(AgentMiddleware):
    """Deny the ``max_repeats``-th identical tool call in a row of a thread or run."""

    state_schema = LoopBrakeState

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        super().__init__()
        self.seam = SessionBrake.of(
            brake, options, default_key=self._default_key, where="langchain"
        )
        self.brake = self.seam.brake

    @staticmethod
    def _default_key(request: Any) -> str:
        """The thread, else this run (a call outside ``create_agent``: a session alone)."""
        thread = thread_session_key(request)
        if thread is not None:
            return thread
        state = getattr(request, "state", None)
        run = state.get("loop_brake_run") if isinstance(state, dict) else None
        return run if isinstance(run, str) else fresh_call_id()

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """A new run: a session key of its own, and no stop yet."""
        return {"loop_brake_run": f"run-{fresh_call_id()}", "loop_brake_stop": None}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """After a stop, end the run instead of calling the model again."""
        stop = state.get("loop_brake_stop")
        if not stop:
            return None
        return {"jump_to": "end", "messages": [AIMessage(content=stop)]}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The run ended: forget its own session (a thread's stays, LRU-bounded)."""
        run = state.get("loop_brake_run")
        if isinstance(run, str):
            self.seam.release(run)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    def _denial(self, request: Any) -> tuple[Verdict, ToolMessage | Command | None]:
        call = request.tool_call
        verdict = self.seam.judge(
            self.seam.session(request), call["name"], call.get("args"), call.get("id")
        )
        if not verdict.denied:
            return verdict, None
        message = denial_message(verdict, call)  # the denial a LangGraph ToolNode gives
        if verdict.stop:  # before_model ends the run
            return verdict, Command(
                update={"messages": [message], "loop_brake_stop": verdict.message}
            )
        return verdict, message

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        verdict, denial = self._denial(request)
        if denial is not None:
            return denial
        with self.seam.running(verdict):  # the call ends with its answer or exception
            return answered(self.seam, verdict, handler(request))

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        verdict, denial = self._denial(request)
        if denial is not None:
            return denial
        with self.seam.running(verdict):
            return answered(self.seam, verdict, await handler(request))
