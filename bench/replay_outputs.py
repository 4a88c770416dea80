"""Every ``replay`` output of two builds on every sample, compared byte for byte.

    python bench/replay_outputs.py /tmp/old        # a copy of the tree before a change
    python bench/replay_outputs.py /tmp/old --list # also name each case compared

A speed-up of ``replay`` must leave what it prints alone. This runs, with
``PYTHONPATH=OLD`` and then with this checkout, ``loop-brake replay`` on every
transcript in ``samples/``, in the Claude Code fixtures of ``tests/fixtures/``
and in ``../shared/samples-real`` (``--real DIR``; read in place when it is
there), on a small generated Claude Code transcript with message ids and usage
(bench/gen.py, the shape of bench/run.py's replay input) and on the same with
responses split over lines as Claude Code writes them: the text summary,
``--json``, ``--html -`` and ``--verdicts`` of each; for the Claude Code files
also ``--sweep 2..6`` and the summary and ``--json`` under the sample policies
that change what is read (results, user turns, args_ignore, warn_at). stdout,
stderr and the exit status must be equal; each difference is printed, and the
exit status is then 1.

The commands run in a scratch directory with the samples' paths absolute, so
``python -m`` never imports the caller's checkout for the old build. The C reader
of each tree is used where it is built there (``python setup.py build_ext
--inplace``; copy the ``.so`` into OLD otherwise, or both run without it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "samples-real"
sys.path.insert(0, str(HERE))

import gen  # noqa: E402

SKIP_SUFFIXES = (".md", ".toml", ".yml", ".csv")
CLAUDE_FIXTURES = ("claude-code", "claude-stream", "waste")
POLICIES = ("progress.toml", "user-turn.toml", "args-ignore.toml", "warn.toml")


def samples(real: Path) -> list[Path]:
    """Every input file of samples/, of the Claude Code fixtures and of the real samples
    (when ``real`` is there), in a stable order."""
    fixtures = ROOT / "tests" / "fixtures"
    roots = [ROOT / "samples"] + [fixtures / name for name in CLAUDE_FIXTURES]
    roots += [real] if real.is_dir() else []
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.name.endswith(SKIP_SUFFIXES) and path not in found:
                if "/config/" not in str(path) and "/tenants/" not in str(path):
                    found.append(path)
    return found


def generated(directory: Path) -> list[Path]:
    """A small bench transcript, and one with split responses and repeated call ids."""
    plain = directory / "claude-usage.jsonl"
    gen.write(str(plain), gen.claude_transcript(1 << 20))
    split = directory / "claude-split.jsonl"
    with open(plain, "rb") as src, open(split, "wb") as out:
        for number, line in enumerate(src):
            out.write(line)
            if b'"assistant"' in line and number % 3 == 0:
                # the same message again, as Claude Code writes a response over lines
                out.write(line.replace(b'"output_tokens":', b'"output_tokens":1'))
    return [plain, split]


def cases(inputs: list[Path]) -> list[list[str]]:
    """The replay argument lists compared."""
    policy_dir = ROOT / "samples" / "policies"
    out: list[list[str]] = []
    for path in inputs:
        name = str(path)
        out += [[name], ["--json", name], ["--html", "-", name], ["--verdicts", name]]
        if "claude" in path.name:  # what the speed work touches: every way it is read
            out.append(["--json", "--sweep", "2..6", name])
            for policy in POLICIES:
                out.append(["--json", "--policy", str(policy_dir / policy), name])
            out.append(["--policy", str(policy_dir / "progress.toml"), name])
    # the bench's own invocation, and every sample in one run
    out.append(["--json", "--format", "claude-code", str(inputs[-1])])
    out.append(["--json", *map(str, inputs[:-2])])
    return out


def run(tree: Path, args: list[str], scratch: Path) -> tuple[bytes, bytes, int]:
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="100", NO_COLOR="1", TZ="UTC")
    env.pop("LOOP_BRAKE_PURE_PYTHON", None)
    proc = subprocess.run(
        [sys.executable, "-m", "loop_brake_cli", "replay", *args],
        capture_output=True,
        env=env,
        cwd=scratch,
        timeout=600,
    )
    return proc.stdout, proc.stderr, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="the tree before the change (PYTHONPATH)")
    parser.add_argument("--list", action="store_true", help="name each case compared")
    parser.add_argument(
        "--real", type=Path, default=SHARED, help=f"the real samples (default {SHARED})"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        all_cases = cases(samples(args.real) + generated(scratch))
        differ = 0
        for case in all_cases:
            old = run(args.old.resolve(), case, scratch)
            new = run(ROOT, case, scratch)
            same = old == new
            if args.list or not same:
                print(f"{'same' if same else 'DIFFERENT'}: replay {' '.join(case)}", flush=True)
            if not same:
                differ += 1
                for label, a, b in zip(("stdout", "stderr", "status"), old, new, strict=True):
                    if a != b:
                        print(f"  {label} differs: old {a!r:.300}\n  new {b!r:.300}")
        print(f"{len(all_cases)} replays compared, {differ} different")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
