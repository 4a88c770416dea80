"""``loop-brake doctor``: is the brake on, as this user has it installed?

A brake that fails open is silent by design (the call runs, one stderr line the
agent hides), so a setup slip leaves it off with nobody told. The doctor looks
at what a user has, never at what it would install, and says per check ✓ or ✗
with the fix:

* ``setup.py``: this program and its version, the policy the CLI would find from
  here (or ``--policy``) and ``$DSH_LOOP_BRAKE_MAX_REPEATS``, the optional extras
  the setup needs (redis for a Redis store, re2 for a policy's own
  ``result_ignore`` patterns), the C reader, and the fail-open notices the hook
  gave in the last week (``hook/notice.py``);
* ``store.py``: the store (``--store``, ``$LOOP_BRAKE_STORE`` or the default file,
  and every store a hook entry names): the SQLite file's kind and permissions,
  a Redis server's ``maxmemory-policy`` (only ``noeviction`` keeps every streak),
  and one canary count through it, then forgotten;
* ``settings.py`` finds the loop-brake entries in each agent's settings files
  (Claude Code's user, project and local settings, Codex's ``hooks.json`` and
  ``config.toml``, Gemini CLI's settings, Cursor's ``hooks.json``) and
  ``entries.py`` checks each: its program resolves to an executable file (a bare
  name found only through a venv on this PATH is a ✗), it runs (one canary
  decision through ``hook/check.py``, in a throwaway session), the agent's own
  switch does not turn hooks off, and the events a policy needs are there.

A check is a ``Check``: its status (``ok``, ``fail``: something would leave the
brake off; ``warn``: the brake is on but something is wrong or at risk;
``info``), what it is about, one line of detail and the fix. Nothing here
prints: ``commands/doctor.py`` draws them, as text or ``--json``. Nothing here
reads a tool's arguments, and a store URL is always shown redacted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FAIL", "INFO", "OK", "WARN", "Check", "Options", "diagnose"]

OK = "ok"
FAIL = "fail"
WARN = "warn"
INFO = "info"


@dataclass
class Check:
    """One line of the report: ``status``, ``name`` (what was checked), ``detail`` (one
    line), ``fix`` (what to do, or "") and ``data`` (for ``--json``: paths, commands)."""

    status: str
    name: str
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Options:
    """What to check: ``store`` and ``policy`` as given (None: as the hook finds them),
    ``agents`` the agents that must have a hook (empty: every agent that has
    settings here), ``cwd`` the project folder, ``env`` the environment."""

    store: str | None = None
    policy: str | None = None
    agents: tuple[str, ...] = ()
    cwd: str = "."
    env: dict[str, str] = field(default_factory=dict)


def diagnose(options: Options) -> list[Check]:
    """Every check, in the order a person reads them: the program, the policy, the
    store, the extras, each agent's hook entries, the C reader, past fail-opens."""
    from . import entries, settings, setup, store

    checks = [setup.program_check()]
    policy_checks, policy = setup.policy_checks(options)
    checks += policy_checks
    found = settings.find_entries(options)
    targets = store.targets(options, found)
    for target in targets:
        checks += store.store_checks(target, options.env)
    checks += setup.extra_checks(targets, options)
    checks += entries.entry_checks(found, options, policy)
    checks.append(setup.reader_check())
    checks.append(setup.notice_check(options.env))
    return checks
