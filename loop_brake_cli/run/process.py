"""The agent as a process group: started, ended on request, and never left behind.

The agent starts in a session of its own (``start_new_session``), so its process
group holds it and everything it forks that does not leave. Ending it is SIGTERM
to the whole group, then SIGKILL to whatever is left after ``grace`` seconds.
When the agent exits by itself, the rest of its group (a server it started, a
child holding its stdout) is ended the same way, so the run neither hangs on a
pipe a grandchild keeps open nor leaves an orphan. On Linux the run is also a
child subreaper (``PR_SET_CHILD_SUBREAPER``): a descendant that left the group
(``setsid``) is re-parented to the run when its parent dies, and is found and
ended there too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

__all__ = ["AgentProcess"]

_POLL = 0.02
"""Seconds between checks that a process group is gone (a product wait, bounded by grace)."""


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


class AgentProcess:
    """One agent process group; ``stop`` may be called from any thread, any number of times."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], grace: float, stderr_pipe: bool = False
    ) -> None:
        """``stderr_pipe``: the agent's stderr on a pipe (``stderr_fd``), not the run's own."""
        self.grace = grace
        self.reaper = _become_subreaper()
        # raises OSError (not found, not executable): the caller reports it
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr_pipe else None,
            start_new_session=True,
        )
        self.pgid = self.proc.pid
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self.signalled: int | None = None  # the last signal the run sent

    @property
    def stdout_fd(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    @property
    def stderr_fd(self) -> int | None:
        return self.proc.stderr.fileno() if self.proc.stderr is not None else None

    def _signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the group; False when no process of it is left."""
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # a member changed its credentials: try the leader alone
            try:
                os.kill(self.pgid, sig)
            except OSError:
                return False
        with self._lock:
            self.signalled = sig
        return True

    def _group_alive(self) -> bool:
        if self.proc.poll() is None:
            return True
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def stop(self) -> None:
        """SIGTERM to the group now, SIGKILL after ``grace`` seconds to what is left (in
        a background thread, so the caller goes on reading the agent's output)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if not self._signal_group(signal.SIGTERM):
            return
        threading.Thread(target=self._kill_after_grace, daemon=True).start()

    def _kill_after_grace(self) -> None:
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            if not self._group_alive():
                return
            time.sleep(_POLL)
        self._signal_group(signal.SIGKILL)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def wait(self) -> int:
        """Wait for the agent itself to exit; its return code (negative: a signal)."""
        return self.proc.wait()

    def end_group(self) -> None:
        """After the agent exited: end the rest of its group, and (as subreaper) any
        descendant re-parented to this process, TERM then KILL after ``grace``."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            sent = self._signal_group(sig)
            orphans = self._orphans()
            for pid in orphans:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            if not sent and not orphans:
                break
            deadline = time.monotonic() + self.grace
            while time.monotonic() < deadline:
                self._reap()
                if not self._group_alive() and not self._orphans():
                    return
                time.sleep(_POLL)
        self._reap()

    def _orphans(self) -> list[int]:
        """Descendants re-parented to this process (its subreaper), agent excluded."""
        if not self.reaper:
            return []
        me = os.getpid()
        found = []
        try:
            entries = os.listdir("/proc")
        except OSError:
            return []
        for entry in entries:
            if not entry.isdigit() or int(entry) == self.proc.pid:
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 1 and int(fields[1]) == me and fields[0] != b"Z":
                found.append(int(entry))
        return found

    def _reap(self) -> None:
        """Collect the exit of any re-parented descendant (no zombie left); only called
        once the agent itself has been waited for."""
        if not self.reaper:
            return
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
