"""Which agent a command runs, the stream it must write, and how the hook is injected.

Each agent's documented way in for one run, none of which writes a file the user
owns (the files written live in the run's private temporary directory):

* **Claude Code** (``claude -p ... --output-format stream-json --verbose``):
  ``--settings FILE``, "a settings JSON file or a JSON string to load additional
  settings from" (https://code.claude.com/docs/en/cli-reference). Hooks from it
  are added to those of the user's, project and local settings (hook lists are
  concatenated across sources; anthropics/claude-code#11392 asks for the
  opposite). A ``--settings`` the user gave is read (file or JSON) and merged:
  the run passes one ``--settings`` holding theirs plus the hook. Not run where
  the user's settings have ``disableAllHooks`` or managed settings allow
  managed hooks only.
* **Codex** (``codex exec --json ...``): ``-c key=value`` overrides, a TOML value
  each (https://developers.openai.com/codex/config-advanced): the session-flags
  config layer, whose inline ``[hooks]`` Codex reads like a ``config.toml``'s
  (codex-rs/hooks/src/engine/discovery.rs, ``load_toml_hooks_from_layer``).
  Codex runs a non-managed hook only once the user has trusted it
  (https://developers.openai.com/codex/hooks, "Review and trust hooks"): a
  headless run needs ``--dangerously-bypass-hook-trust`` in the agent's own
  arguments, which the run never adds for the user (it trusts every hook, not
  only this one). Without it, the brake acts from the stream alone.
* **Gemini CLI** (``gemini -p ... --output-format stream-json``): the system
  settings file named by ``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``
  (packages/cli/src/config/settings.ts, ``getSystemSettingsPath``), whose hook
  lists are concatenated with the user's and project's (settingsSchema.ts,
  ``mergeStrategy: CONCAT``). The file written holds the machine's own system
  settings (read, strict JSON) plus the hook, and
  ``$GEMINI_CLI_SYSTEM_DEFAULTS_PATH`` keeps naming the machine's system
  defaults (it is otherwise looked for beside the system settings). Gemini CLI
  runs settings hooks only in a trusted folder when folder trust is on.
* **OpenCode** (``opencode run --format json``): no command hook (its pre-tool
  hook is a JavaScript plugin's ``tool.execute.before``): braked from the
  stream alone, by ending the run at the first denial.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AGENT_NAMES",
    "Launch",
    "LaunchError",
    "agent_for",
    "prepare",
]


class LaunchError(Exception):
    """The command cannot be run with the brake; ``usage`` True: the command line is
    wrong (exit 2), else the hook cannot be injected (exit 7)."""

    def __init__(self, message: str, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True)
class AgentSpec:
    """One agent: its ``--agent`` name, program names, stream format, the hook dialect
    (None: no command hook) and how its headless stream is asked for."""

    name: str
    programs: tuple[str, ...]
    format: str
    hook_agent: str | None
    stream_hint: str


SPECS: tuple[AgentSpec, ...] = (
    AgentSpec(
        "claude-code",
        ("claude",),
        "claude-stream",
        "claude-code",
        "claude -p PROMPT --output-format stream-json --verbose",
    ),
    AgentSpec("codex", ("codex",), "codex-exec", "codex", "codex exec --json PROMPT"),
    AgentSpec(
        "gemini",
        ("gemini",),
        "gemini-stream",
        "gemini",
        "gemini -p PROMPT --output-format stream-json",
    ),
    AgentSpec("opencode", ("opencode",), "opencode-run", None, "opencode run --format json PROMPT"),
)
AGENT_NAMES = tuple(spec.name for spec in SPECS)


@dataclass
class Launch:
    """What to start: the argv, the environment, the format of its stdout, and how the
    hook reaches the agent (``injection``: None when it cannot)."""

    spec: AgentSpec
    argv: list[str]
    env: dict[str, str]
    injection: str | None
    hook_command: str | None
    files: list[str] = field(default_factory=list)


def agent_for(argv: list[str], forced: str | None = None) -> AgentSpec:
    """The agent ``argv`` runs: ``forced`` (``--agent``), else its program's name."""
    if forced is not None:
        for spec in SPECS:
            if spec.name == forced:
                return spec
        raise LaunchError(f"--agent must be one of {', '.join(AGENT_NAMES)}", usage=True)
    program = os.path.basename(argv[0])
    for suffix in (".exe", ".cmd", ".js", ".mjs"):
        program = program.removesuffix(suffix)
    for spec in SPECS:
        if program in spec.programs:
            return spec
    raise LaunchError(
        f"cannot tell which agent {program!r} is: name it with --agent "
        f"({', '.join(AGENT_NAMES)}), e.g. loop-brake run --agent claude-code -- npx ...",
        usage=True,
    )


def _values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Every value given to one of ``names`` (``--opt V`` or ``--opt=V``)."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in names and i + 1 < len(args):
            found.append(args[i + 1])
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                found.append(arg[len(name) + 1 :])
    return found


def _check_stream(spec: AgentSpec, args: list[str]) -> None:
    """The agent must be asked for its headless JSON stream, which the run reads."""
    if spec.name in ("claude-code", "gemini"):
        ok = "stream-json" in _values(args, ("--output-format", "-o"))
    elif spec.name == "codex":
        ok = "exec" in args[:3] or "e" in args[:3]
        ok = ok and ("--json" in args or "--experimental-json" in args)
    else:
        ok = "run" in args[:3] and "json" in _values(args, ("--format",))
    if not ok:
        raise LaunchError(
            f"loop-brake run reads the agent's JSON stream as it comes: run it as "
            f"`{spec.stream_hint}`",
            usage=True,
        )


def hook_entries(
    agent: str, command_words: tuple[str, ...], progress: bool, user_turns: bool
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` object the agent gets: our entry under each event it needs
    (the pre-tool one; post-tool under a policy that reads results; user-turn
    under ``reset_on_user_turn``), as ``hook install`` writes it."""
    from ..hook.install import hook_entry, install_events, install_target

    executable, *extra = command_words
    entry = hook_entry(agent, executable, None, tuple(extra))
    unmatched = {key: value for key, value in entry.items() if key != "matcher"}
    turn_events = install_target(agent).user_turn_events
    return {
        event: [unmatched if event in turn_events else entry]
        for event in install_events(agent, progress, user_turns)
    }


def prepare(
    spec: AgentSpec,
    argv: list[str],
    command_words: tuple[str, ...],
    workdir: str,
    env: dict[str, str],
    progress: bool = False,
    user_turns: bool = False,
) -> Launch:
    """The launch of ``argv`` with the hook ``command_words`` injected (see the module
    doc); raises LaunchError."""
    _check_stream(spec, argv[1:])
    if spec.hook_agent is None:
        return Launch(spec, list(argv), dict(env), None, None)
    hooks = hook_entries(spec.hook_agent, command_words, progress, user_turns)
    command = next(iter(hooks.values()))[0]["hooks"][0]["command"]
    if spec.name == "claude-code":
        launch = _claude(spec, argv, hooks, workdir, env)
    elif spec.name == "codex":
        launch = _codex(spec, argv, hooks, env)
    else:
        launch = _gemini(spec, argv, hooks, workdir, env)
    launch.hook_command = command
    return launch


def _write_json(path: str, value: Any) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(value, out, indent=2)
        out.write("\n")


def _merge_hooks(settings: dict[str, Any], hooks: dict[str, list[Any]], where: str) -> None:
    """Append our entries to ``settings["hooks"]`` in place (the user's stay first)."""
    existing = settings.setdefault("hooks", {})
    if not isinstance(existing, dict):
        raise LaunchError(f'{where}: "hooks" is not an object; the hook cannot be added')
    for event, entries in hooks.items():
        listed = existing.setdefault(event, [])
        if not isinstance(listed, list):
            raise LaunchError(f"{where}: hooks.{event} is not a list; the hook cannot be added")
        listed.extend(entries)


def _claude(
    spec: AgentSpec, argv: list[str], hooks: dict[str, list[Any]], workdir: str, env: dict[str, str]
) -> Launch:
    """``--settings FILE`` right after the program, holding any ``--settings`` the user
    gave (read, never written) plus the hook."""
    rest: list[str] = []
    given: str | None = None
    args = argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg == "--settings" and i + 1 < len(args):
            given = args[i + 1]
            i += 2
            continue
        if arg.startswith("--settings="):
            given = arg[len("--settings=") :]
            i += 1
            continue
        rest.append(arg)
        i += 1
    settings: dict[str, Any] = {}
    if given is not None:
        settings = _read_settings(given)
    _merge_hooks(settings, hooks, "--settings")
    path = os.path.join(workdir, "claude-settings.json")
    _write_json(path, settings)
    return Launch(
        spec, [argv[0], "--settings", path, *rest], dict(env), f"--settings {path}", None, [path]
    )


def _read_settings(value: str) -> dict[str, Any]:
    """A ``--settings`` value as Claude Code reads it: JSON text, else a file's path."""
    text = value
    if not value.lstrip().startswith("{"):
        try:
            with open(value, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise LaunchError(
                f"--settings {value}: cannot read it ({exc.strerror or exc}); "
                "the hook cannot be added"
            ) from None
    try:
        settings = json.loads(text)
    except ValueError as exc:
        raise LaunchError(
            f"--settings: not JSON (line {getattr(exc, 'lineno', '?')}); the hook cannot be added"
        ) from None
    if not isinstance(settings, dict):
        raise LaunchError("--settings: not a JSON object; the hook cannot be added")
    return settings


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quotes, backslashes and controls escaped)."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def toml_value(value: Any) -> str:
    """A JSON-shaped value (objects, lists, strings, numbers, booleans) as inline TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{toml_string(str(key))} = {toml_value(item)}" for key, item in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"not a TOML value: {type(value).__name__}")


def _codex(
    spec: AgentSpec, argv: list[str], hooks: dict[str, list[Any]], env: dict[str, str]
) -> Launch:
    """``-c hooks.<Event>=[...]`` right after the program, one per event."""
    for value in _values(argv[1:], ("-c", "--config")):
        if value.replace(" ", "").startswith("hooks"):
            raise LaunchError(
                "the agent's own -c hooks... would replace the hook loop-brake run injects "
                "(one -c per key wins): keep your hooks in hooks.json or config.toml",
                usage=True,
            )
    overrides: list[str] = []
    for event, entries in hooks.items():
        overrides += ["-c", f"hooks.{event}={toml_value(entries)}"]
    shown = " ".join(f"-c hooks.{event}=[...]" for event in hooks)
    return Launch(spec, [argv[0], *overrides, *argv[1:]], dict(env), shown, None)


GEMINI_SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
GEMINI_DEFAULTS_ENV = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"


def _gemini_system_paths(env: dict[str, str]) -> tuple[str, str]:
    """Where Gemini CLI would read the system settings and system defaults here."""
    import sys

    settings = env.get(GEMINI_SETTINGS_ENV)
    if not settings:
        if sys.platform == "darwin":
            settings = "/Library/Application Support/GeminiCli/settings.json"
        elif os.name == "nt":
            settings = "C:\\ProgramData\\gemini-cli\\settings.json"
        else:
            settings = "/etc/gemini-cli/settings.json"
    defaults = env.get(GEMINI_DEFAULTS_ENV) or os.path.join(
        os.path.dirname(settings), "system-defaults.json"
    )
    return settings, defaults


def _gemini(
    spec: AgentSpec, argv: list[str], hooks: dict[str, list[Any]], workdir: str, env: dict[str, str]
) -> Launch:
    """A system settings file of the machine's system settings plus the hook, named by
    ``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``; the system defaults keep their path."""
    original, defaults = _gemini_system_paths(env)
    settings: dict[str, Any] = {}
    try:
        with open(original, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = None
    except OSError as exc:
        raise LaunchError(
            f"{original}: cannot read Gemini CLI's system settings ({exc.strerror or exc}); "
            "the hook cannot be added without dropping them"
        ) from None
    if text is not None and text.strip():
        try:
            settings = json.loads(text)
        except ValueError:
            raise LaunchError(
                f"{original}: Gemini CLI's system settings are not strict JSON (comments?); "
                "the hook cannot be added without dropping them"
            ) from None
        if not isinstance(settings, dict):
            raise LaunchError(f"{original}: not a JSON object; the hook cannot be added")
    _merge_hooks(settings, hooks, original)
    path = os.path.join(workdir, "gemini-system-settings.json")
    _write_json(path, settings)
    new_env = dict(env)
    new_env[GEMINI_SETTINGS_ENV] = path
    new_env[GEMINI_DEFAULTS_ENV] = defaults
    return Launch(spec, list(argv), new_env, f"{GEMINI_SETTINGS_ENV}={path}", None, [path])
