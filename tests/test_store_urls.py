"""A mistyped store URL is an error, never a SQLite file named like a URL (issue 36
item 9).

Wherever ``--store``, ``$LOOP_BRAKE_STORE`` or ``--state`` is read (``filter``,
``state``, ``mcp-proxy``, ``mcp-gateway``, the hook, ``LoopBrake(store=...)``), a
value that looks like a URL but is not one we read (``redis:/host:6379``,
``redis:host:6379``, ``valkey:...``, ``redis//host``) exits 2 with one line naming
only its head (the rest may hold a password), and nothing is created in the working
directory. A path with a ``/`` before its first ``:`` (``./redis:x``, an absolute
path) is still a SQLite file. The hook, whose exit 2 would block the call, fails
open (or closed with ``--fail-closed``) with the same line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from loop_brake_cli import LoopBrake
from loop_brake_cli.stores import check_target, open_store

SECRET = "canary-urlpass-5c1d"
MISTYPED = [
    f"redis:/admin:{SECRET}@127.0.0.1:6379",
    f"redis:admin:{SECRET}@127.0.0.1:6379",
    f"valkey:admin:{SECRET}@host",
    f"redis//admin:{SECRET}@host",
    f"REDIS//admin:{SECRET}@host",
    f"redis+cluster//admin:{SECRET}@host:7000",
    f"rediss+cluster:/admin:{SECRET}@host:7000",
    f"rediss:{SECRET}",
    f"unix:{SECRET}/redis.sock",
    f"sqlite:{SECRET}.db",
    f" redis://admin:{SECRET}@host",
    f"valkey://admin:{SECRET}@host",
]
PATHS = ["./redis:x", "redis/x.db", "state.db", "a b:c.db", "sub/x:y.db"]
EVENT = json.dumps({"tool": "ls", "args": {"secret": SECRET}, "sessionId": "s"}) + "\n"


def _run(cwd: Path, *args: str, input: str = EVENT, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", *args],
        input=input.encode(),
        capture_output=True,
        env=cli_env(**env),
        cwd=cwd,
        timeout=60,
    )


def _refused(done: subprocess.CompletedProcess, cwd: Path) -> str:
    """Exit 2, one line naming the head, no secret, no traceback, nothing created."""
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "is not a store URL" in err or "unknown store" in err, err
    assert SECRET not in err and SECRET not in done.stdout.decode()
    assert "Traceback" not in err
    assert list(cwd.iterdir()) == [], list(cwd.iterdir())
    return err


@pytest.mark.parametrize("url", MISTYPED)
def test_filter_refuses_a_mistyped_store_url(url: str, tmp_path: Path) -> None:
    _refused(_run(tmp_path, "filter", "--store", url), tmp_path)


@pytest.mark.parametrize("url", MISTYPED[:3])
def test_the_environment_variable_is_read_the_same_way(url: str, tmp_path: Path) -> None:
    _refused(_run(tmp_path, "filter", LOOP_BRAKE_STORE=url), tmp_path)
    _refused(_run(tmp_path, "state", "list", LOOP_BRAKE_STORE=url), tmp_path)


@pytest.mark.parametrize("option", ["--store", "--state"])
def test_state_refuses_it(option: str, tmp_path: Path) -> None:
    err = _refused(_run(tmp_path, "state", "list", option, MISTYPED[0]), tmp_path)
    assert "'redis:'" in err
    _refused(_run(tmp_path, "state", "reset", "--session", "s", option, MISTYPED[1]), tmp_path)


def test_the_mcp_front_ends_refuse_it_before_starting(tmp_path: Path) -> None:
    proxy = _run(
        tmp_path, "mcp-proxy", "--store", MISTYPED[0], "--session", "k", "--", "true", input=""
    )
    _refused(proxy, tmp_path)
    gateway = _run(
        tmp_path,
        "mcp-gateway",
        "--store",
        MISTYPED[1],
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        input="",
    )
    if b"needs the MCP SDK" not in gateway.stderr:
        _refused(gateway, tmp_path)


@pytest.mark.parametrize("option", ["--store", "--state"])
def test_the_hook_fails_open_and_says_why(option: str, tmp_path: Path) -> None:
    """The hook's exit 2 would block the call: a bad store is its failure like any other,
    one stderr line, allowed (denied with --fail-closed); no file is made."""
    call = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s",
            "tool_name": "Bash",
            "tool_input": {"command": SECRET},
            "tool_use_id": "t1",
        }
    )
    done = _run(tmp_path, "hook", option, MISTYPED[1], input=call)
    err = done.stderr.decode()
    assert done.returncode == 0 and b"Decision" not in done.stdout, err  # allowed
    assert SECRET.encode() not in done.stdout
    assert "is not a store URL" in err and "allowed" in err and SECRET not in err
    closed = _run(tmp_path, "hook", option, MISTYPED[2], "--fail-closed", input=call)
    assert b'"permissionDecision":"deny"' in closed.stdout
    assert SECRET.encode() not in closed.stdout + closed.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", MISTYPED)
def test_the_library_raises_value_error(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        LoopBrake(store=url)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("path", PATHS)
def test_a_path_that_is_no_url_is_a_sqlite_file(path: str, tmp_path: Path) -> None:
    """``./redis:x``, a relative path with a ``/`` before its ``:``, a plain name: SQLite."""
    check_target(path)
    (tmp_path / "redis").mkdir()
    (tmp_path / "sub").mkdir()
    done = _run(tmp_path, "filter", "--store", path)
    assert done.returncode == 0, done.stderr.decode()
    assert (tmp_path / path).is_file()
    absolute = str(tmp_path / "abs:x.db")
    store = open_store(absolute)
    try:
        assert store.reset() == 0
    finally:
        store.close()


def test_store_wins_over_the_environment_and_state_is_a_path(tmp_path: Path) -> None:
    """docs/hook.md: the hook's store is ``--store``, else ``$LOOP_BRAKE_STORE``, else the
    default file; ``--state PATH`` is ``--store PATH``; ``state list`` reads the same."""
    call = json.dumps(
        {"session_id": "s1", "tool_name": "Read", "tool_input": {}, "tool_use_id": "x"}
    )
    (tmp_path / "env").mkdir()
    for option in ("--store", "--state"):
        done = _run(tmp_path, "hook", option, "chosen.db", input=call, LOOP_BRAKE_STORE="env/e.db")
        assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["chosen.db", "env"]
        assert list((tmp_path / "env").iterdir()) == []
    listed = _run(
        tmp_path, "state", "list", "--json", "--state", "chosen.db", LOOP_BRAKE_STORE="env/e.db"
    )
    assert json.loads(listed.stdout)["sessionId"] == "s1", listed.stderr.decode()
    done = _run(tmp_path, "hook", input=call, LOOP_BRAKE_STORE="env/e.db")
    assert done.returncode == 0, done.stderr.decode()
    assert [p.name for p in (tmp_path / "env").iterdir()] == ["e.db"]


def test_a_sqlite_url_names_an_absolute_path(tmp_path: Path) -> None:
    """docs/scaling.md: ``sqlite:///absolute/path``; ``sqlite://relative`` is an error
    that says the form, and creates nothing."""
    absolute = tmp_path / "by-url.db"
    store = open_store(f"sqlite://{absolute}")
    try:
        assert store.count_call("s", "read", b"d" * 32, None, 3)[0].count == 1
    finally:
        store.close()
    assert absolute.is_file()
    for url in ("sqlite://relative.db", "sqlite:///"):
        with pytest.raises(ValueError, match="sqlite:///absolute/path"):
            open_store(url)
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _run(empty, "filter", "--store", "sqlite://relative.db")
    assert done.returncode == 2 and b"sqlite:///absolute/path" in done.stderr
    assert list(empty.iterdir()) == []
