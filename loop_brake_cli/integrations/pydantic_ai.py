"""The brake in a pydantic-ai agent: a wrapper toolset.

Needs ``pip install 'loop-brake-cli[pydantic-ai]'`` (``pydantic-ai-slim`` is enough)::

    from pydantic_ai import Agent, FunctionToolset
    from loop_brake_cli.integrations.pydantic_ai import LoopBrakeToolset

    tools = LoopBrakeToolset(FunctionToolset([search]), max_repeats=3)
    agent = Agent(model, toolsets=[tools])

``call_tool`` sees each call after pydantic-ai validated its arguments and before
the tool runs. A denied call's tool never runs: it raises ``ModelRetry`` with the
core's denial text, which is how pydantic-ai tells a model to change its call
(the model gets a retry prompt for that tool call id). Each denial uses one of
the tool's retries (``Agent(retries=...)``), so a model that keeps repeating
itself past them ends the run with ``UnexpectedModelBehavior``: a brake that
stops, as the plugin's thrown error does.

The session is the conversation pydantic-ai resolves for the run
(``ctx.conversation_id``: the one passed to ``run``, or the one on the message
history, else a fresh id per run), else the run id: a run that continues a
conversation continues its streak, two runs in parallel never share one.
``toolset.brake`` is the ``LoopBrake``; ``session_key=`` (a function of the
``RunContext``) keys calls yourself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import ModelRetry
from pydantic_ai.toolsets import WrapperToolset
from pydantic_core import to_jsonable_python

from ..brake import LoopBrake
from ._session import make_brake

__all__ = ["LoopBrakeToolset", "conversation_session_key"]


def conversation_session_key(ctx: Any) -> str | None:
    """The run's conversation id, else its run id (None: the core's ``"default"``)."""
    return getattr(ctx, "conversation_id", None) or getattr(ctx, "run_id", None)


@dataclass(init=False)
class LoopBrakeToolset(WrapperToolset[Any]):
    """Deny the ``max_repeats``-th identical tool call in a row of a conversation."""

    brake: LoopBrake = field(default_factory=LoopBrake)
    session_key: Callable[[Any], str | None] = conversation_session_key

    def __init__(
        self,
        wrapped: Any,
        brake: LoopBrake | None = None,
        *,
        max_repeats: object = None,
        session_key: Callable[[Any], str | None] = conversation_session_key,
    ) -> None:
        self.brake = make_brake(brake, max_repeats)
        self.wrapped = wrapped
        self.session_key = session_key

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        verdict = self.brake.check(
            name,
            to_jsonable_python(tool_args),  # validated values (dates, models) as JSON
            session_id=self.session_key(ctx),
            call_id=ctx.tool_call_id,
        )
        if verdict.denied:
            raise ModelRetry(verdict.message)
        return await super().call_tool(name, tool_args, ctx, tool)
