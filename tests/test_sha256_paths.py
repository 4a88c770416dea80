"""Every SHA-256 compression of the C reader (``loop_brake_cli/readers/_sha256.h``) against
hashlib: the portable one, x86 SHA-NI where this processor has it, and ARMv8 SHA-2,
built for aarch64 with Debian's cross compiler and run under qemu-user (whose ``max``
processor has the SHA-2 instructions). ``tests/native/sha256_harness.c`` prints one
digest per compression it can use, each fed in uneven pieces across block edges.
``.ci/run`` installs the cross compiler and qemu, so in CI nothing here is skipped.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "tests" / "native" / "sha256_harness.c"
RNG = random.Random(30)
INPUTS = [RNG.randbytes(n) for n in [*range(0, 130), 191, 192, 1000, 4096, 100_003]]
INPUTS.append(b"a" * 1_000_000)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: .ci/run installs it")
        pytest.skip(f"{name} is not installed")
    return path


def _digests(command: list[str], data: bytes) -> dict[str, str]:
    run = subprocess.run(command, input=data, capture_output=True, check=True, timeout=300)
    return dict(line.rsplit(" ", 1) for line in run.stdout.decode().splitlines())


def _check(command: list[str], expected_paths: set[str]) -> None:
    for data in INPUTS:
        got = _digests(command, data)
        assert set(got) >= expected_paths, got
        want = hashlib.sha256(data).hexdigest()
        assert got == dict.fromkeys(got, want), len(data)


def test_the_native_compressions_equal_hashlib(tmp_path):
    binary = tmp_path / "harness"
    subprocess.run([_tool("gcc"), "-O2", "-o", str(binary), str(HARNESS)], check=True)
    with open("/proc/cpuinfo") as cpuinfo:
        sha_ni = " sha_ni " in cpuinfo.read().replace("\n", " ")
    _check([str(binary)], {"portable", "SHA-NI"} if sha_ni else {"portable"})


def test_the_armv8_sha2_compression_equals_hashlib(tmp_path):
    binary = tmp_path / "harness-aarch64"
    compiler = _tool("aarch64-linux-gnu-gcc")
    subprocess.run([compiler, "-O2", "-static", "-o", str(binary), str(HARNESS)], check=True)
    _check([_tool("qemu-aarch64"), "-cpu", "max", str(binary)], {"portable", "ARMv8 SHA-2"})
