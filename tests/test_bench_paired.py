"""``bench/paired.py`` with a file path works on a fresh machine (issue 41).

It crashed unless ``$TMPDIR/loop-brake-bench`` existed: it enters that data
directory before running anything, and nothing had made it when the input was a
path rather than one of the generated inputs. Here it runs from a TMPDIR where
that directory does not exist, with two commands that copy the input, and must
print their medians and find their outputs identical.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT


def test_paired_runs_a_file_path_from_a_fresh_tmpdir(tmp_path):
    fresh = tmp_path / "fresh-tmp"
    fresh.mkdir()
    data = tmp_path / "input.jsonl"
    data.write_bytes(b'{"tool":"Read","args":{"path":"a"}}\n' * 3)
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "paired.py"),
            "--rounds",
            "1",
            "--check",
            "--input",
            str(data),
            "one=cat {input}",
            "two=cat {input}",
        ],
        capture_output=True,
        env=dict(os.environ, TMPDIR=str(fresh)),
        timeout=120,
    )
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "Traceback" not in proc.stderr.decode()
    assert f"input {data.name}: 0.0 MB; medians of 1:" in out
    assert "output one: identical" in out and "output two: identical" in out
    # the data directory it made is the fresh one's, and its outputs were removed
    assert os.listdir(fresh / "loop-brake-bench") == []
