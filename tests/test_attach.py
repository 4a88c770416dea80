"""attach/dispose on a register/execute registry: the plugin's own scenarios.

A tool registered before attach (caught at the execute seam), one after (braked
at the register seam), a call through both seams counted once, exact restore on
dispose, and a fresh streak after dispose.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from loop_brake_cli import LoopBrake, LoopBrakeError, attach, dispose

CANARY = "sk-canary-7f3a9c"


class Registry:
    """The harness's registry shape: ``register(definition)``, ``execute(name, args)``."""

    def __init__(self, pass_call_id: bool = True) -> None:
        self.tools: dict[str, Any] = {}
        self.pass_call_id = pass_call_id

    def register(self, definition: Any) -> None:
        self.tools[definition["name"]] = definition

    def execute(self, name: str, args: Any = None, **context: Any) -> Any:
        if not self.pass_call_id:
            context.pop("call_id", None)
        return self.tools[name]["execute"](args, **context)


def counting_tool(name: str, ran: list[Any]) -> dict[str, Any]:
    def execute(args: Any, **context: Any) -> str:
        ran.append(args)
        return f"{name} ok"

    return {"name": name, "execute": execute}


def test_registered_after_attach_is_braked_at_the_register_seam() -> None:
    registry, ran = Registry(), []
    brake = attach(registry, max_repeats=3)
    definition = counting_tool("search", ran)
    registry.register(definition)
    braked = registry.tools["search"]["execute"]
    assert braked is not definition["execute"]  # a braked copy; the original is left alone
    assert braked({"q": "weather"}, session_id="s1") == "search ok"
    assert braked({"q": "weather"}, session_id="s1") == "search ok"
    with pytest.raises(LoopBrakeError) as info:
        braked({"q": "weather"}, session_id="s1")
    assert len(ran) == 2
    assert info.value.count == 3 and info.value.hash_prefix == "35dca543bb3b"
    assert isinstance(brake, LoopBrake) and len(brake) == 1


def test_registered_before_attach_is_caught_at_the_execute_seam() -> None:
    registry, ran = Registry(), []
    registry.register(counting_tool("search", ran))
    attach(registry, max_repeats=3)
    registry.execute("search", {"q": "weather"})
    registry.execute("search", {"q": "weather"})
    with pytest.raises(LoopBrakeError) as info:
        registry.execute("search", {"q": "weather"})
    assert len(ran) == 2 and info.value.session_id == "default"
    assert registry.execute("search", {"q": "other"}) == "search ok"  # a new streak


@pytest.mark.parametrize("pass_call_id", [True, False], ids=["call-id", "no-call-id"])
def test_a_call_through_both_seams_is_counted_once(pass_call_id: bool) -> None:
    registry, ran = Registry(pass_call_id), []
    attach(registry, max_repeats=3)
    registry.register(counting_tool("search", ran))
    registry.execute("search", {"q": "weather"}, session_id="s1", call_id="c1")
    registry.execute("search", {"q": "weather"}, session_id="s1", call_id="c2")
    with pytest.raises(LoopBrakeError) as info:
        registry.execute("search", {"q": "weather"}, session_id="s1", call_id="c3")
    # Counted twice per call, the second call would have been denied: half the limit.
    assert len(ran) == 2 and info.value.count == 3


def test_the_same_call_id_at_one_seam_twice_is_one_call() -> None:
    registry, ran = Registry(), []
    attach(registry, max_repeats=2)
    registry.register(counting_tool("search", ran))
    run = registry.tools["search"]["execute"]
    run({"q": "weather"}, call_id="c1")
    run({"q": "weather"}, call_id="c1")  # the same host call, logged twice
    with pytest.raises(LoopBrakeError):
        run({"q": "weather"}, call_id="c2")
    assert len(ran) == 2


def test_dispose_restores_exactly_and_forgets_streaks() -> None:
    registry, ran = Registry(), []
    own = lambda definition: None  # noqa: E731 - an instance attribute the host set itself
    registry.audit = own  # type: ignore[attr-defined]
    before = dict(vars(registry))
    brake = attach(registry, max_repeats=3)
    assert "register" in vars(registry) and "execute" in vars(registry)
    registry.register(counting_tool("search", ran))
    registry.execute("search", {"q": "weather"})
    registry.execute("search", {"q": "weather"})
    dispose(brake)
    assert {k: v for k, v in vars(registry).items() if k != "tools"} == {
        k: v for k, v in before.items() if k != "tools"
    }
    assert registry.register.__func__ is Registry.register  # type: ignore[attr-defined]
    assert registry.execute.__func__ is Registry.execute  # type: ignore[attr-defined]
    assert len(brake) == 0  # every streak forgotten
    # The tool registered while attached passes straight through now.
    for _ in range(5):
        registry.execute("search", {"q": "weather"})
    assert len(ran) == 7
    dispose(brake)  # a second dispose does nothing


def test_an_instance_attribute_is_restored_not_deleted() -> None:
    registry = Registry()
    custom_register = registry.register
    registry.register = custom_register  # type: ignore[method-assign]
    brake = attach(registry)
    assert registry.register is not custom_register
    dispose(brake)
    assert vars(registry)["register"] is custom_register


def test_reattach_after_dispose_starts_a_fresh_streak() -> None:
    registry, ran = Registry(), []
    registry.register(counting_tool("search", ran))
    brake = attach(registry, max_repeats=3)
    registry.execute("search", {"q": "weather"})
    registry.execute("search", {"q": "weather"})
    dispose(registry)  # by the registry works as well as by the brake
    attach(registry, brake)
    registry.execute("search", {"q": "weather"})
    registry.execute("search", {"q": "weather"})  # the old run's two are not held against it
    with pytest.raises(LoopBrakeError):
        registry.execute("search", {"q": "weather"})
    assert len(ran) == 4


def test_a_later_patch_on_top_is_kept_and_ours_passes_through() -> None:
    registry, ran = Registry(), []
    registry.register(counting_tool("search", ran))
    brake = attach(registry, max_repeats=2)
    ours = registry.execute
    calls: list[str] = []

    def later(name: str, args: Any = None, **context: Any) -> Any:
        calls.append(name)
        return ours(name, args, **context)

    registry.execute = later  # type: ignore[method-assign]
    dispose(brake)
    assert registry.execute is later  # not clobbered
    for _ in range(4):
        registry.execute("search", {"q": "weather"})
    assert len(ran) == 4 and len(calls) == 4


def test_sessions_never_share_a_streak() -> None:
    registry, ran = Registry(), []
    registry.register(counting_tool("search", ran))
    attach(registry, max_repeats=2, session_id="fallback")
    registry.execute("search", {"q": "weather"}, session_id="a")
    registry.execute("search", {"q": "weather"}, session_id="b")
    registry.execute("search", {"q": "weather"}, agent_id="agent-7")
    registry.execute("search", {"q": "weather"})
    with pytest.raises(LoopBrakeError) as info:
        registry.execute("search", {"q": "weather"})
    assert info.value.session_id == "fallback" and len(ran) == 4


def test_a_registry_without_execute_gets_the_register_seam_only() -> None:
    class RegisterOnly:
        def __init__(self) -> None:
            self.tools: dict[str, Any] = {}

        def register(self, definition: Any) -> None:
            self.tools[definition.name] = definition

    class Tool:
        name = "search"

        def __init__(self) -> None:
            self.ran = 0

        def execute(self, args: Any) -> int:
            self.ran += 1
            return self.ran

    registry, tool = RegisterOnly(), Tool()
    brake = attach(registry, max_repeats=2)
    assert "execute" not in vars(registry)
    registry.register(tool)
    assert registry.tools["search"] is not tool and tool.execute.__name__ == "execute"
    registry.tools["search"].execute({"q": "x"})
    with pytest.raises(LoopBrakeError):
        registry.tools["search"].execute({"q": "x"})
    assert tool.ran == 1
    dispose(brake)
    assert "register" not in vars(registry)


def test_async_seams() -> None:
    class AsyncRegistry(Registry):
        async def execute(self, name: str, args: Any = None, **context: Any) -> Any:
            return await self.tools[name]["execute"](args)  # drops the call id

    ran: list[Any] = []

    async def search(args: Any, **context: Any) -> str:
        ran.append(args)
        await asyncio.sleep(0)
        return "ok"

    async def main() -> None:
        registry = AsyncRegistry()
        attach(registry, max_repeats=3)
        registry.register({"name": "search", "execute": search})
        await registry.execute("search", {"q": "weather"}, session_id="s")
        await registry.execute("search", {"q": "weather"}, session_id="s")
        with pytest.raises(LoopBrakeError):
            await registry.execute("search", {"q": "weather"}, session_id="s")

    asyncio.run(main())
    assert len(ran) == 2


def test_rejects_what_it_cannot_attach_to() -> None:
    with pytest.raises(TypeError, match="no register method"):
        attach(object())
    with pytest.raises(ValueError, match="either brake or max_repeats"):
        attach(Registry(), LoopBrake(), max_repeats=3)


def test_canary_never_in_the_error_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    registry, ran = Registry(), []
    registry.register(counting_tool("login", ran))
    attach(registry, max_repeats=2)
    registry.execute("login", {"token": CANARY})
    with pytest.raises(LoopBrakeError) as info:
        registry.execute("login", {"token": CANARY})
    shown = [str(info.value), repr(info.value), repr(info.value.verdict), caplog.text]
    assert all(CANARY not in text for text in shown)


# -- a policy's warn_at: a warned call's str result ends with the warning, once -------


def warned_brake(text: str = "warn_at = 2\n") -> LoopBrake:
    from loop_brake_cli.core.policy import parse_policy

    return LoopBrake(3, policy=parse_policy(text, "policy.toml")[0])


def the_warning(args: Any, count: int = 2) -> str:
    reference = warned_brake()
    for _ in range(count):
        warning = reference.check("search", args).warning
    assert warning is not None
    return warning


@pytest.mark.parametrize("pass_call_id", [True, False], ids=["call-id", "no-call-id"])
def test_a_warned_call_through_both_seams_is_told_once(pass_call_id: bool) -> None:
    registry, ran = Registry(pass_call_id), []
    attach(registry, warned_brake())
    registry.register(counting_tool("search", ran))
    args = {"q": CANARY}
    first = registry.execute("search", args, session_id="s1", call_id="c1")
    second = registry.execute("search", args, session_id="s1", call_id="c2")
    assert (first, second) == ("search ok", f"search ok\n\n{the_warning(args)}")
    with pytest.raises(LoopBrakeError):
        registry.execute("search", args, session_id="s1", call_id="c3")
    assert len(ran) == 2 and CANARY not in second.removeprefix("search ok")


def test_a_warned_call_at_either_seam_alone_is_told() -> None:
    registry, ran = Registry(), []
    registry.register(counting_tool("search", ran))  # before attach: the execute seam
    attach(registry, warned_brake())
    registry.register(counting_tool("braked", ran))  # after: its own execute
    args = {"q": "weather"}
    told = [registry.execute("search", args, session_id="a") for _ in range(2)]
    assert told == ["search ok", f"search ok\n\n{the_warning(args)}"]
    run = registry.tools["braked"]["execute"]
    assert run(args, session_id="b", call_id="c1") == "braked ok"
    assert run(args, session_id="b", call_id="c1") == "braked ok"  # the same call again
    assert run(args, session_id="b", call_id="c2").startswith("braked ok\n\nloop brake: warning:")


@pytest.mark.parametrize("policy", [None, '[[tools]]\nmatch = "other"\nmax_repeats = 9\n'])
def test_without_warn_at_every_result_is_the_tools_own(policy: Any) -> None:
    result = {"hits": 3}
    registry = Registry()
    brake = LoopBrake(3) if policy is None else warned_brake(policy)
    attach(registry, brake)
    registry.register({"name": "search", "execute": lambda args, **context: result})
    registry.register(counting_tool("text", []))
    assert all(registry.execute("search", {"q": 1}) is result for _ in range(2))
    assert [registry.execute("text", {"q": 1}) for _ in range(2)] == ["text ok"] * 2


def test_a_warning_never_holds_the_arguments(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    registry = Registry()
    registry.register(counting_tool("login", []))
    attach(registry, warned_brake("warn_at = 1\n"))
    told = [registry.execute("login", {"token": CANARY}) for _ in range(2)]
    assert all('loop brake: warning: tool "login"' in text for text in told)
    out, err = capfd.readouterr()
    assert all(CANARY not in text for text in [*told, caplog.text, out, err])
