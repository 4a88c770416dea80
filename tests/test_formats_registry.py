"""The format registry: every adapter module on disk is registered, has fixtures and a sample.

As jc tests its ``parsers/`` folder (STYLE.md, habit 3): a new module in
loop_brake_cli/formats/ fails here until it is listed in ``formats.ADAPTERS``,
has a tests/fixtures/<name>/ folder and a samples/formats/<name>.* file that
``formats.detect`` recognises as it.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES, SAMPLES, calls, calls_and_errors, read

from loop_brake_cli import formats

FOLDER = Path(formats.__file__).parent
MODULES = sorted(path.stem for path in FOLDER.glob("*.py") if not path.stem.startswith("_"))


def info(stem: str) -> formats.FormatInfo:
    return importlib.import_module(f"{formats.__name__}.{stem}").INFO


def test_the_folder_holds_adapters() -> None:
    assert len(MODULES) >= 12  # the glob found the modules, not an empty or wrong folder


@pytest.mark.parametrize("stem", MODULES)
def test_every_module_is_registered(stem: str) -> None:
    module = importlib.import_module(f"{formats.__name__}.{stem}")
    assert module in formats.ADAPTERS
    assert formats.get(module.INFO.name) is module


@pytest.mark.parametrize("stem", MODULES)
def test_every_module_has_a_fixture_folder(stem: str) -> None:
    folder = FIXTURES / info(stem).name
    assert folder.is_dir(), f"{folder} is missing"
    assert any(path.is_file() for path in folder.rglob("*")), f"{folder} holds no file"


@pytest.mark.parametrize("stem", MODULES)
def test_every_module_has_a_sample_it_detects(stem: str) -> None:
    name = info(stem).name
    samples = sorted(SAMPLES.glob(f"{name}.*"))
    assert samples, f"no samples/formats/{name}.* file"
    for path in samples:
        assert read(path)[0] == name, path.name


def test_every_sample_names_a_registered_format() -> None:
    names = set(formats.names())
    assert sorted(p.name for p in SAMPLES.iterdir() if p.name.split(".")[0] not in names) == []


@pytest.mark.parametrize(
    ("fmt", "name", "count"),
    [
        ("anthropic", "anthropic.json", 2),
        ("cassette", "cassette.yaml", 1),
        ("gemini-cli", "gemini-cli.json", 2),
        ("openai-chat", "openai-chat.json", 3),
        ("openai-responses", "openai-responses.json", 2),
        ("openhands", "openhands.json", 4),
        ("swe-agent", "swe-agent.traj", 3),
        ("mini-swe-agent", "mini-swe-agent.traj.json", 4),
        ("cline", "cline.json", 4),
        ("roo-code", "roo-code.json", 4),
        ("cline-ui", "cline-ui.json", 4),
    ],
)
def test_own_sample_detected(fmt: str, name: str, count: int) -> None:
    """samples/formats: our own small example is recognised and read whole."""
    detected, records = read(SAMPLES / name)
    assert detected == fmt
    assert len(calls(records)) == count == len(calls_and_errors(records))
