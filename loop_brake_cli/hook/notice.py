"""Telling a person, once per session, that the brake is off: the fail-open notice.

When the hook fails open (store down, an extra missing, a policy that does not
load), the call is allowed and one stderr line says why; but agents hide a
hook's stderr, so the brake would be off with nobody told. Where the agent's
hook answer has a field a person sees without deciding anything (Claude Code's,
Codex's and Gemini CLI's ``systemMessage``: ``agents/<agent>.notice_output``),
the first fail-open of each session also answers
``loop brake is off for this session: <reason>`` there. The verdict stays
fail-open: no decision field is written, the call goes through the user's own
permission flow as with no answer. Cursor's pre-tool answer has no such field
(a ``user_message`` travels with a ``permission``): stderr only.

Once per session, across hook processes: a marker file per (agent, session)
digest in ``${XDG_STATE_HOME:-~/.local/state}/loop-brake/fail-open/``, created
with ``O_EXCL`` (the first creator tells). Never beside ``--state``: that folder
is the store's, and a store that fails is often the reason. A marker holds
nothing (its name is a digest, never the session id); markers older than a week
are removed when a new one is made. A folder that cannot be written, or an input
without a session id, means the notice is given every time: loud rather than
silent. ``loop-brake doctor`` counts the markers of the last week.
"""

from __future__ import annotations

import hashlib
import os
import time

__all__ = ["MESSAGE", "WEEK", "first_notice", "forget", "marker_dir"]

MESSAGE = "loop brake is off for this session: {reason}"
WEEK = 7 * 86400


def marker_dir(env: dict[str, str] | None = None) -> str:
    """The ``fail-open`` folder under the user's XDG state folder (not ``$LOOP_BRAKE_STATE``
    nor ``--state``: the notice's memory is the user's, whichever store is used)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "loop-brake", "fail-open")


def _marker(agent: str, session: str, env: dict[str, str] | None = None) -> str:
    digest = hashlib.sha256(f"{agent}\0{session}".encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(marker_dir(env), digest[:32])


def first_notice(agent: str, session: object) -> bool:
    """Whether this is the session's first fail-open notice (and mark it told); always
    True for an input without a session id (a string; ``""`` is one)."""
    if not isinstance(session, str):
        return True
    path = _marker(agent, session)
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True  # cannot remember: tell every time
    _prune(folder)
    return True


def forget(agent: str, session: str, env: dict[str, str] | None = None) -> None:
    """Remove a session's marker (a canary session's, after a check run with ``env``)."""
    try:
        os.unlink(_marker(agent, session, env))
    except OSError:
        pass


def _prune(folder: str) -> None:
    cutoff = time.time() - WEEK
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)
                except OSError:
                    continue
    except OSError:
        pass
