"""The client configuration snippets of docs/mcp-proxy.md have the shape their clients read.

Every ```json block holding ``mcpServers`` is parsed: a stdio entry has a
``command`` and string ``args`` (``type`` ``stdio`` if given), and when the command
is ``loop-brake`` its arguments parse as that subcommand's options, and every
``--header`` value's ``env:VAR`` is set by the entry's ``env`` block; an HTTP
entry has an ``http(s)`` ``url`` (``type`` ``http`` if given) and string
``headers``. Both remote sections show Claude Desktop, Cursor and Claude Code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
from conftest import ROOT

from loop_brake_cli.cli import cli
from loop_brake_cli.mcp_shared.headers import parse_headers

PAGE = ROOT / "docs" / "mcp-proxy.md"
BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)
CLIENTS = ("**Claude Desktop**", "**Cursor**", "**Claude Code**")


def snippets(text: str) -> list[dict[str, Any]]:
    return [json.loads(body) for body in BLOCK.findall(text) if '"mcpServers"' in body]


def check_stdio(name: str, entry: dict[str, Any]) -> None:
    assert isinstance(entry["command"], str) and entry["command"], name
    args = entry.get("args", [])
    assert isinstance(args, list) and all(isinstance(arg, str) for arg in args), name
    assert entry.get("type", "stdio") == "stdio", name
    env = entry.get("env", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()), name
    if Path(entry["command"]).name != "loop-brake":
        return
    command = cli.get_command(click.Context(cli), args[0])
    assert command is not None, f"{name}: loop-brake {args[0]} is not a command"
    context = command.make_context(args[0], list(args[1:]))  # raises on an unknown option
    specs = context.params.get("header_specs") or ()
    parse_headers(specs, {key: "set" for key in env})  # raises if an env:VAR is not set


def check_http(name: str, entry: dict[str, Any]) -> None:
    assert re.fullmatch(r"https?://[^\s/]+/\S*", entry["url"]), name
    assert entry.get("type", "http") == "http", name
    headers = entry.get("headers", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()), name


def test_every_configuration_snippet_has_its_clients_shape() -> None:
    found = snippets(PAGE.read_text())
    assert len(found) >= 9
    for snippet in found:
        assert set(snippet) == {"mcpServers"}
        for name, entry in snippet["mcpServers"].items():
            if "url" in entry:
                check_http(name, entry)
            else:
                check_stdio(name, entry)


def test_the_bridge_and_the_gateway_each_show_three_clients() -> None:
    text = PAGE.read_text()
    bridge = text.split("## Remote servers", 1)[1].split("## Many agents", 1)[0]
    gateway = text.split("## Many agents", 1)[1]
    for section, command in ((bridge, "--url"), (gateway, "8808/mcp")):
        for label in CLIENTS:
            after = section.split(label, 1)[1]
            block = re.search(r"```(json|sh)\n(.*?)```", after, re.DOTALL)
            assert block is not None and command in block.group(2), label
