"""Issue 27, item 4: trajectory datasets (one run per row, Parquet or JSON lines), replayed
whole, split by row group over workers, or in pieces merged from partial reports; every way
gives the report of one run over everything.

Datasets are made here in the two public layouts (tests/corpus_helpers.py); the CLI runs
for real in subprocesses, the property test in process through the same functions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from corpus_helpers import (
    openhands_row,
    random_rows,
    swe_agent_row,
    write_jsonl,
    write_parquet,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow", reason="the parquet extra: pip install -e '.[test]'")

CANARY = "CANARY-corpora-6b2e0d"


def test_both_layouts_in_parquet_and_json_lines(tmp_path: Path) -> None:
    loop = [("execute_bash", {"command": "pytest"})] * 4 + [("think", {"thought": "done"})]
    rows = [
        openhands_row("django__django-11099", loop),
        swe_agent_row("django__django-11099", ["ls -F", "open a.py", "open a.py", "open a.py"]),
        {"instance_id": "x__y-1", "messages": json.dumps([{"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}])},
    ]  # fmt: skip
    parquet = write_parquet(tmp_path / "runs.parquet", rows[:2], per_group=1)
    jsonl = write_jsonl(tmp_path / "runs.jsonl", rows)
    doc = json.loads(run_cli("replay", str(parquet), str(jsonl), "--json").stdout)
    assert doc["totals"]["formats"] == {"jsonl-rows": 1, "parquet-rows": 1}
    sessions = [(s["file"][-7:], s["session"], s["calls"], s["denied"]) for s in doc["sessions"]]
    assert sessions == [
        ("parquet", "django__django-11099#0", 5, 2),
        ("parquet", "django__django-11099#1", 4, 1),
        ("s.jsonl", "django__django-11099#0", 5, 2),
        ("s.jsonl", "django__django-11099#1", 4, 1),
        ("s.jsonl", "x__y-1#2", 1, 0),
    ]
    (first, *_) = doc["denials"]
    assert first["at"]["path"] == "$[0].trajectory[6].tool_calls[0]"
    # SWE-agent's text action: its command's first word is the tool, located at its message
    assert doc["sessions"][1]["longestStreak"]["tool"] == "open"
    assert doc["denials"][1]["at"]["path"] == "$[1].trajectory[8]"


def test_rows_are_runs_a_streak_never_crosses_them(tmp_path: Path) -> None:
    same = [("execute_bash", {"command": "ls"})] * 2
    rows = [openhands_row("a__b-1", same) for _ in range(3)]  # 2 + 2 + 2 identical calls
    doc = json.loads(
        run_cli("replay", str(write_jsonl(tmp_path / "r.jsonl", rows)), "--json").stdout
    )
    assert doc["totals"]["denied"] == 0 and doc["totals"]["sessions"] == 3


def dataset_dir(tmp_path: Path, secret: str = "") -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    rows = random_rows(60, seed=1, secret=secret)
    write_parquet(runs / "a.parquet", rows[:40], per_group=5)  # 8 row groups
    write_jsonl(runs / "b.jsonl", rows[40:])
    write_jsonl(runs / "c.jsonl", [swe_agent_row("s__t-2", ["ls", "ls", "ls", "ls"])])
    return runs


def test_one_worker_and_four_give_the_same_report(tmp_path: Path) -> None:
    runs = dataset_dir(tmp_path)
    for output in (["--json"], [], ["--html", "-"], ["--sweep", "2..6"]):
        one = run_cli("replay", str(runs), "-j", "1", *output)
        four = run_cli("replay", str(runs), "-j", "4", *output)
        assert one.returncode == four.returncode == 0, four.stderr
        assert one.stdout == four.stdout and one.stderr == four.stderr
    # a single Parquet file is split by row group too
    parquet = str(runs / "a.parquet")
    assert (
        run_cli("replay", parquet, "-j", "3", "--json").stdout
        == run_cli("replay", parquet, "--json").stdout
    )


def test_merged_partials_are_the_single_run_text_json_and_html(tmp_path: Path) -> None:
    runs = dataset_dir(tmp_path, secret=CANARY)
    files = [str(runs / name) for name in ("a.parquet", "b.jsonl", "c.jsonl")]
    parts = []
    for index, group in enumerate([files[:1], files[1:]]):
        part = tmp_path / f"part-{index}.json"
        result = run_cli("replay", *group, "--partial", str(part))
        assert result.returncode == 0 and f"wrote {part}" in result.stderr.decode()
        parts.append(str(part))
    for output in (["--json"], [], ["--html", "-"]):
        single = run_cli("replay", *files, *output)
        merged = run_cli("merge", *parts, *output)
        assert merged.returncode == single.returncode == 0, merged.stderr
        assert merged.stdout == single.stdout
        for blob in (single.stdout, merged.stdout, merged.stderr):
            assert CANARY.encode() not in blob
    for part in parts:  # a partial never holds an argument
        assert CANARY.encode() not in Path(part).read_bytes()


def test_merge_refuses_what_it_cannot_merge(tmp_path: Path) -> None:
    rows = write_jsonl(tmp_path / "r.jsonl", random_rows(3))
    three, four = tmp_path / "m3.json", tmp_path / "m4.json"
    run_cli("replay", str(rows), "--partial", str(three))
    run_cli("replay", str(rows), "--partial", str(four), "-m", "4")
    other = run_cli("merge", str(three), str(four))
    assert other.returncode == 2 and "made with other settings" in other.stderr.decode()
    not_partial = run_cli("merge", str(three), str(rows))
    assert not_partial.returncode == 3
    assert f"{rows}: not valid JSON" in not_partial.stderr.decode()
    missing = run_cli("merge", str(tmp_path / "nope.json"), "--json")
    assert missing.returncode == 3 and "cannot open" in json.loads(missing.stdout)["error"]
    sweep = run_cli("merge", str(three), "--sweep", "2..20")
    assert sweep.returncode == 2 and "replay them with --sweep 2..20" in sweep.stderr.decode()


def _corrupt_row_group(path: Path, group: int) -> None:
    """Overwrite the page header of ``group``'s first column chunk with junk."""
    import pyarrow.parquet as pq

    offset = pq.ParquetFile(path).metadata.row_group(group).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    data[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))


def test_a_corrupt_row_group_is_a_located_error(tmp_path: Path) -> None:
    rows = random_rows(20, seed=3, secret=CANARY)
    path = write_parquet(tmp_path / "bad.parquet", rows, per_group=5)
    whole = json.loads(run_cli("replay", str(path), "--json").stdout)
    _corrupt_row_group(path, 1)
    result = run_cli("replay", str(path))
    assert result.returncode == 3
    err = result.stderr.decode()
    assert f"{path}:row group 1 (rows 5-9): unreadable (" in err
    assert "corrupt or truncated data)" in err and "Traceback" not in err
    doc = json.loads(run_cli("replay", str(path), "--json").stdout)
    assert doc["totals"]["sessions"] == whole["totals"]["sessions"] - 5  # the others are read
    assert doc["totals"]["unreadable"] == 1
    strict = run_cli("replay", str(path), "--strict", "-j", "2")
    assert strict.returncode == 3 and "row group 1 (rows 5-9)" in strict.stderr.decode()
    for blob in (result.stdout, result.stderr, strict.stdout, strict.stderr):
        assert CANARY.encode() not in blob


def test_a_file_that_is_not_parquet_after_its_magic(tmp_path: Path) -> None:
    path = tmp_path / "cut.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 64)
    result = run_cli("replay", str(path))
    assert result.returncode == 3
    assert "not a readable Parquet file" in result.stderr.decode()


@st.composite
def splits(
    draw: st.DrawFn,
) -> tuple[list[dict], int, list[list[tuple[int, tuple[int, ...] | None]]]]:
    """Rows, rows per row group, and a split: pieces of (file, row groups or None) in order."""
    count = draw(st.integers(1, 24))
    seed = draw(st.integers(0, 10_000))
    per_group = draw(st.integers(1, 6))
    groups = -(-count // per_group)
    units: list[tuple[int, tuple[int, ...] | None]] = [(1, None)]
    cuts = sorted(draw(st.sets(st.integers(1, groups - 1), max_size=4))) if groups > 1 else []
    bounds = [0, *cuts, groups]
    units = [(0, tuple(range(a, b))) for a, b in zip(bounds, bounds[1:], strict=False)] + units
    pieces, current = [], []
    for unit in units:
        current.append(unit)
        if draw(st.booleans()):
            pieces.append(current)
            current = []
    if current:
        pieces.append(current)
    return random_rows(count, seed=seed), per_group, pieces


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(splits())
def test_any_split_merged_is_the_single_run(tmp_path_factory: pytest.TempPathFactory, case) -> None:
    """Property: however the files and row groups are cut into pieces, each piece replayed
    on its own into a partial (written and read back as JSON), merge(partials) is the
    report of one run, as --json."""
    from loop_brake_cli.analysis import Job, merge, replay_files, replay_job, report_to_json
    from loop_brake_cli.corpus.partial import from_partial, to_partial

    rows, per_group, pieces = case
    folder = tmp_path_factory.mktemp("split")
    files = [
        str(write_parquet(folder / "a.parquet", rows, per_group)),
        str(write_jsonl(folder / "b.jsonl", rows[: len(rows) // 2 + 1])),
    ]
    settings_ = dict(max_repeats=3, max_repeats_source="default", cap=10, max_line_bytes=1 << 24)
    single = replay_files(files, format_name=None, timeline=True, **settings_)
    partials = []
    for piece in pieces:
        reports = [
            replay_job(
                Job(files[index], None, 3, "default", 10, 1 << 24, timeline=True, row_groups=groups)
            )
            for index, groups in piece
        ]
        partials.append(json.loads(json.dumps(to_partial(merge(reports)))))
    merged = merge(from_partial(doc)[0] for doc in partials)
    assert report_to_json(merged, None, None) == report_to_json(single, None, None)


def test_the_recipe_shown_is_the_recipe_run() -> None:
    """docs/corpora.md shows the body of docs/recipes/dask_replay.py, which its sh block runs."""
    from conftest import ROOT

    page = (ROOT / "docs" / "corpora.md").read_text(encoding="utf-8")
    (shown,) = [block for block in page.split("```python\n")[1:]]
    shown = shown.split("```", 1)[0]
    recipe = (ROOT / "docs" / "recipes" / "dask_replay.py").read_text(encoding="utf-8")
    indented = "".join(f"    {line}" if line.strip() else line for line in shown.splitlines(True))
    assert indented in recipe


def test_parquet_without_pyarrow_says_how_to_get_it(tmp_path: Path) -> None:
    """An install without the parquet extra: the file is unreadable and says which extra."""
    from conftest import cli_env

    rows = write_parquet(tmp_path / "runs.parquet", random_rows(2), per_group=1)
    blocker = tmp_path / "no-pyarrow" / "pyarrow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('pyarrow is not installed')\n")
    env = cli_env(PYTHONPATH=str(blocker.parent))
    result = run_cli("replay", str(rows), env=env)
    assert result.returncode == 3
    err = result.stderr.decode()
    assert "reading Parquet needs pyarrow: pip install 'loop-brake-cli[parquet]'" in err
    assert "Traceback" not in err
    jsonl = write_jsonl(tmp_path / "runs.jsonl", random_rows(2))
    assert run_cli("replay", str(jsonl), env=env).returncode == 0  # JSON lines need nothing


def test_a_table_of_something_else_is_skipped_in_a_directory(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = tmp_path / "runs"
    runs.mkdir()
    write_jsonl(runs / "a.jsonl", random_rows(2))
    pq.write_table(pa.Table.from_pylist([{"price": 1.5, "name": "x"}]), runs / "prices.parquet")
    found = run_cli("replay", str(runs))
    assert found.returncode == 0, found.stderr
    assert "prices.parquet: skipped: no trajectory or messages column" in found.stderr.decode()
    assert run_cli("replay", str(runs), "--strict").returncode == 3
    named = run_cli("replay", str(runs / "prices.parquet"))
    assert named.returncode == 3 and "not a dataset of runs" in named.stderr.decode()
