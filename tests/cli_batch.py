"""Many runs of ``filter`` or ``replay`` in one process: each file its own run.

Both commands take many files and judge each as its own run by default (the brake
reset between files), labelling each verdict line with its ``file``. The equivalence
tests judge every drawn sequence several times (once per agent dialect, with and
without verdicts); starting ``python -m loop_brake_cli`` for each of those runs was
most of their time (0.1-0.2 s each, 16 a drawn example). A test here draws its
examples first, writing each run's input as a file of a ``CliBatch``, then runs each
distinct command line once over all its files and checks each example against its
own file's verdict lines: the same command, the same per-file run, one start.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from conftest import run_cli

CHUNK = 400  # files per process: far below any argv limit


class CliBatch:
    """Runs added now (``add``), made later (``run``), read by ``verdicts``."""

    def __init__(
        self,
        folder: Path,
        env: dict[str, str] | None = None,
        ok: Iterable[int] = (0,),
        secrets: Iterable[str] = (),
    ) -> None:
        self.folder = folder
        self.env = env
        self.ok = tuple(ok)
        self.secrets = tuple(secrets)
        self.commands: dict[tuple[str, ...], list[str]] = {}
        self.statuses: dict[tuple[str, ...], tuple[int, ...]] = {}
        self.lines: dict[tuple[tuple[str, ...], str], list[dict]] = {}
        self.bytes: dict[tuple[tuple[str, ...], str], bytes] = {}
        self.texts: dict[str, str] = {}
        self.done = False

    def file(self, text: str, suffix: str = ".jsonl") -> str:
        """A file holding ``text``, one per distinct text (policies are shared)."""
        if text not in self.texts:
            path = self.folder / f"f{len(self.texts)}{suffix}"
            path.write_text(text, encoding="utf-8")
            self.texts[text] = str(path)
        return self.texts[text]

    def add(
        self, args: tuple[str, ...], path: str | Path, ok: Iterable[int] | None = None
    ) -> tuple[tuple[str, ...], str]:
        """``loop-brake ARGS PATH``, to be run with the other paths of the same ARGS
        (its exit status one of ``ok``: the batch's unless given)."""
        assert not self.done, "a run added after the batch ran"
        self.statuses[args] = tuple(ok) if ok is not None else self.ok
        paths = self.commands.setdefault(args, [])
        if str(path) not in paths:
            paths.append(str(path))
        return args, str(path)

    def run(self) -> None:
        """Each command once per CHUNK files: its status one of its ``ok``, no secret in its
        stdout or stderr, its verdict lines shared out by their ``file`` (and each line's
        bytes without that field: what a run of that file alone prints)."""
        for args, paths in self.commands.items():
            for start in range(0, len(paths), CHUNK):
                chunk = paths[start : start + CHUNK]
                done = run_cli(*args, *chunk, env=self.env, timeout=600)
                assert done.returncode in self.statuses[args], (args, done.returncode, done.stderr)
                for secret in self.secrets:
                    assert secret.encode() not in done.stdout + done.stderr, args
                for path in chunk:
                    self.lines[args, path] = []
                    self.bytes[args, path] = b""
                if args[0] != "filter" and "--verdicts" not in args:
                    continue  # a summary: its status and its secrets checked above
                for line in done.stdout.splitlines(keepends=True):
                    if not line.strip():
                        continue
                    verdict = json.loads(line)
                    # one file alone is not labelled (as a run of that file alone)
                    owner = chunk[0] if len(chunk) == 1 else verdict.pop("file")
                    self.lines[args, owner].append(verdict)
                    if len(chunk) > 1:  # the label many files get: a run of one has none
                        label = b'"file":' + json.dumps(owner).encode() + b","
                        assert line.count(label) == 1, line
                        line = line.replace(label, b"", 1)
                    self.bytes[args, owner] += line
        self.done = True

    def verdicts(self, run: tuple[tuple[str, ...], str]) -> list[dict]:
        assert self.done, "verdicts read before the batch ran"
        return self.lines[run]

    def output(self, run: tuple[tuple[str, ...], str]) -> bytes:
        """The run's verdict lines as bytes, without the ``file`` field."""
        assert self.done, "output read before the batch ran"
        return self.bytes[run]
