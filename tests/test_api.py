"""The Python API an agent host uses: the error, the wrappers, a light import."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import ROOT, cli_env

from loop_brake_cli import (
    LoopBrake,
    LoopBrakeError,
    call_hash,
    decorate_tool,
    deny_message,
    wrap_execute,
)

EXACT_MESSAGE = (
    'loop brake: tool "search" called 3 times in a row with identical arguments '
    "(call 35dca543bb3b\u2026, limit 3); the call was denied before it ran.\n"
    "Change the arguments, call a different tool, or stop."
)


def test_error_attributes_and_exact_message() -> None:
    brake = LoopBrake(3)
    brake.enforce("search", {"q": "weather"}, session_id="s1")
    brake.enforce("search", {"q": "weather"}, session_id="s1")
    with pytest.raises(LoopBrakeError) as info:
        brake.enforce("search", {"q": "weather"}, session_id="s1")
    error = info.value
    assert str(error) == EXACT_MESSAGE
    assert error.code == "LOOP_BRAKE"
    assert error.plugin == "dsh-loop-brake"
    assert error.tool_name == "search"
    assert error.count == 3
    assert error.max_repeats == 3
    assert error.hash_prefix == "35dca543bb3b"
    assert error.session_id == "s1"
    assert "weather" not in str(error) and "weather" not in repr(error)
    # The 4th is denied with count 4.
    with pytest.raises(LoopBrakeError) as info:
        brake.enforce("search", {"q": "weather"}, session_id="s1")
    assert info.value.count == 4 and "called 4 times" in str(info.value)


def test_message_writes_the_tool_name_as_a_json_string() -> None:
    message = deny_message('we"ird\ntool', 5, 5, "0123456789ab")
    assert message.startswith('loop brake: tool "we\\"ird\\ntool" called 5 times')
    assert "(call 0123456789ab\u2026, limit 5)" in message
    assert deny_message("météo", 3, 3, "x" * 12).startswith('loop brake: tool "météo"')


def test_default_session_and_limit() -> None:
    brake = LoopBrake()
    brake.enforce("t")
    brake.enforce("t", {})
    with pytest.raises(LoopBrakeError) as info:
        brake.enforce("t", None)
    assert info.value.session_id == "default" and info.value.max_repeats == 3


def test_wrap_execute_sync_body_never_runs_when_denied() -> None:
    ran: list[object] = []

    def execute(args: dict, *, call_id: str | None = None) -> str:
        ran.append(args)
        return "result"

    guarded = wrap_execute(execute, LoopBrake(2), tool="search", session_id="s1")
    assert guarded({"q": "weather"}) == "result"
    with pytest.raises(LoopBrakeError):
        guarded({"q": "weather"})
    assert ran == [{"q": "weather"}]
    assert guarded({"q": "other"}) == "result"
    assert guarded.__name__ == "execute"


def test_wrap_execute_counts_a_call_id_once() -> None:
    ran: list[str] = []
    guarded = wrap_execute(lambda args, call_id=None: ran.append(call_id), LoopBrake(2), tool="t")
    guarded({}, call_id="c1")
    guarded({}, call_id="c1")  # the same host call seen at a second seam
    with pytest.raises(LoopBrakeError):
        guarded({}, call_id="c2")
    assert ran == ["c1", "c1"]


def test_wrap_execute_async() -> None:
    ran: list[object] = []

    async def execute(args: dict) -> str:
        ran.append(args)
        return "async result"

    guarded = wrap_execute(execute, LoopBrake(2), tool="search")

    async def scenario() -> None:
        assert await guarded({"q": 1}) == "async result"
        with pytest.raises(LoopBrakeError):
            await guarded({"q": 1.0})

    asyncio.run(scenario())
    assert ran == [{"q": 1}]


def test_wrap_execute_async_counts_a_call_id_once() -> None:
    """docs/library.md: the call_id keyword de-duplicates a call seen at two seams, for
    an async tool as for a sync one."""
    ran: list[str] = []

    async def execute(args: dict, *, call_id: str | None = None) -> str:
        ran.append(call_id or "")
        return "async result"

    guarded = wrap_execute(execute, LoopBrake(2), tool="t")

    async def scenario() -> None:
        assert await guarded({}, call_id="c1") == "async result"
        assert await guarded({}, call_id="c1") == "async result"  # a second seam
        with pytest.raises(LoopBrakeError):
            await guarded({}, call_id="c2")

    asyncio.run(scenario())
    assert ran == ["c1", "c1"]


def test_decorate_tool_mapping_returns_a_braked_copy() -> None:
    calls: list[object] = []

    def execute(args: dict) -> str:
        calls.append(args)
        return "ok"

    definition = {"name": "search", "description": "web search", "execute": execute}
    braked = decorate_tool(definition, LoopBrake(2))
    assert braked is not definition
    assert definition["execute"] is execute  # the original is untouched
    assert braked["description"] == "web search" and braked["name"] == "search"
    assert braked["execute"]({"q": 1}) == "ok"
    with pytest.raises(LoopBrakeError) as info:
        braked["execute"]({"q": 1})
    assert info.value.tool_name == "search"
    assert calls == [{"q": 1}]
    assert definition["execute"]({"q": 1}) == "ok"  # the original still runs freely


def test_decorate_tool_object_and_async() -> None:
    calls: list[object] = []

    async def execute(args: dict) -> str:
        calls.append(args)
        return "ok"

    definition = SimpleNamespace(name="fetch", execute=execute)
    braked = decorate_tool(definition, LoopBrake(1))
    assert braked is not definition and definition.execute is execute

    async def scenario() -> None:
        with pytest.raises(LoopBrakeError):
            await braked.execute({"url": "u"})
        assert await definition.execute({"url": "u"}) == "ok"

    asyncio.run(scenario())
    assert calls == [{"url": "u"}]


def test_call_hash_is_the_documented_example() -> None:
    assert (
        call_hash("search", {"q": "weather"})
        == "35dca543bb3bd644ba0724701fbaacb94cb7ef4e01e1d81f9c270199c0ef60bb"
    )


def test_importing_the_api_pulls_in_neither_click_nor_rich() -> None:
    code = (
        "import sys\n"
        "from loop_brake_cli import LoopBrake, LoopBrakeError, call_hash\n"
        "LoopBrake(3).check('t', {'a': 1})\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'rich'))\n"
        "print(','.join(heavy) or 'none')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=cli_env(), cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == b"none"


def test_message_tool_name_is_written_as_json_stringify_would() -> None:
    # Node: JSON.stringify("a\ud800\x7f\u2028\n") === '"a\\ud800\x7f\u2028\\n"'
    message = deny_message("a\ud800\x7f\u2028\n", 3, 3, "0" * 12)
    assert message.startswith('loop brake: tool "a\\ud800\x7f\u2028\\n" called 3 times')
