"""A trajectory dataset's rows, located, in bounded memory.

Two containers hold one run per row:

* **Parquet** (the files of the SWE-agent and OpenHands trajectory datasets on
  the Hugging Face hub): read with ``pyarrow`` (the optional extra
  ``loop-brake-cli[parquet]``), row group by row group, ``BATCH_ROWS`` rows at a
  time and only the columns a run needs, so memory stays flat however large the
  file is. A row group that cannot be read (corrupt, truncated) is one located
  error and the next row group is read.
* **JSON lines** whose first line is a row object: ``{"instance_id": ...,
  "trajectory": [...]}`` (or ``messages``), as ``datasets``' ``to_json`` writes.

Rows are numbered from 0 in the file, whatever part of it is read, so a row
keeps its number (and its session name) when a file is split by row group.
Nothing here quotes the input in a message: a bad row is named by its number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..readers.reader import BOM, Source

PARQUET_MAGIC = b"PAR1"
ID_COLUMNS = ("instance_id",)
"""The run's name: the task it attempts (several runs may attempt one task)."""
RUN_COLUMNS = ("trajectory", "messages")
"""The run itself: a list of messages (or that list as a JSON string)."""
BATCH_ROWS = 16
"""Rows converted to Python at once: a dataset row can hold megabytes of text."""
BUFFER_BYTES = 1 << 20
"""pyarrow reads a column chunk through a buffer of this size, page by page, and without
pre-buffering: with its defaults a whole row group's column chunk, which can be hundreds
of MB, is read at once (a 193 MB single-group file: Arrow's pool peaked at 201 MB; so:
39 MB)."""
PYARROW_MISSING = (
    "reading Parquet needs pyarrow: pip install 'loop-brake-cli[parquet]' (or pyarrow)"
)

_ROW_START = re.compile(
    rb'^\s*\{.*"(?<!\\")instance_id"\s*:.*"(?<!\\")(trajectory|messages)"\s*:\s*[\["]', re.S
)


class Row:
    """One row: its number in the file, its line (JSON lines) and its columns."""

    __slots__ = ("columns", "line", "number")

    def __init__(self, number: int, line: int | None, columns: Any) -> None:
        self.number = number
        self.line = line
        self.columns = columns


class RowError:
    """Rows that could not be read: where (a row group, or a line) and why, never the data."""

    __slots__ = ("line", "message", "where")

    def __init__(self, message: str, line: int | None = None, where: str | None = None) -> None:
        self.message = message
        self.line = line
        self.where = where


class DatasetError(Exception):
    """The whole file cannot be read as a dataset (its message quotes nothing).

    ``not_runs``: it is a readable table that holds no runs (no run column), so a file
    found in a directory is skipped, as any file that is not a transcript is."""

    def __init__(self, message: str, not_runs: bool = False) -> None:
        super().__init__(message)
        self.not_runs = not_runs


def container(head: bytes) -> str | None:
    """``"parquet"``, ``"jsonl"`` (rows of runs), or None: not a dataset of runs."""
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    first = head.removeprefix(BOM).split(b"\n", 1)[0]
    if _ROW_START.match(first):
        return "jsonl"
    return None


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(PYARROW_MISSING) from None
    return pq


def _open_parquet(path: str) -> Any:
    pq = _pyarrow()
    try:
        return pq.ParquetFile(path, buffer_size=BUFFER_BYTES, pre_buffer=False)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError...: name the class only
        raise DatasetError(
            f"not a readable Parquet file ({exc.__class__.__name__}: its footer is "
            "missing, truncated or corrupt)"
        ) from None


def row_groups(path: str) -> int:
    """How many row groups a Parquet file has (its footer only is read)."""
    return int(_open_parquet(path).metadata.num_row_groups)


def _columns(parquet: Any) -> list[str]:
    names = list(parquet.schema_arrow.names)
    run = [name for name in RUN_COLUMNS if name in names]
    if not run:
        raise DatasetError(
            "no trajectory or messages column: not a dataset of runs "
            f"(its columns: {', '.join(names[:20])})",
            not_runs=True,
        )
    return [name for name in ID_COLUMNS if name in names] + run[:1]


def parquet_rows(path: str, groups: Sequence[int] | None = None) -> Iterator[Row | RowError]:
    """The rows of ``groups`` (default: every row group), in order; a row group that cannot
    be read is a RowError at ``row group N (rows A-B)``, and reading goes on."""
    parquet = _open_parquet(path)
    columns = _columns(parquet)
    meta = parquet.metadata
    starts = [0]
    for index in range(meta.num_row_groups):
        starts.append(starts[-1] + meta.row_group(index).num_rows)
    for group in range(meta.num_row_groups) if groups is None else groups:
        first, end = starts[group], starts[group + 1]
        number = first
        try:
            batches = parquet.iter_batches(
                batch_size=BATCH_ROWS, row_groups=[group], columns=columns
            )
            for batch in batches:
                for columns_of_row in batch.to_pylist():
                    yield Row(number, None, columns_of_row)
                    number += 1
        except Exception as exc:  # corrupt pages, bad encodings: pyarrow's own errors
            after = f", after row {number - 1}" if number > first else ""
            yield RowError(
                f"unreadable{after} ({exc.__class__.__name__}: corrupt or truncated data)",
                where=f"row group {group} (rows {first}-{end - 1})",
            )


def jsonl_rows(source: Source) -> Iterator[Row | RowError]:
    """One row per line; a line that is not a JSON object is a located RowError."""
    number = 0
    for line, raw in source.lines():
        if raw is None:
            yield RowError("line too long (not read)", line)
            number += 1
            continue
        try:
            value = parse_json(raw)
        except JSONInputError as exc:
            yield RowError(f"not valid JSON: {exc}", line)
            number += 1
            continue
        yield Row(number, line, value)
        number += 1


def pieces(path: str, most: int) -> list[tuple[int, ...] | None]:
    """How ``replay -j`` splits a file: a Parquet dataset of several row groups into at
    most ``most`` runs of consecutive row groups, anything else not at all (``[None]``).
    Cheap: four bytes, then the footer of a Parquet file."""
    try:
        with open(path, "rb") as stream:
            if stream.read(len(PARQUET_MAGIC)) != PARQUET_MAGIC:
                return [None]
        groups = row_groups(path)
    except (OSError, DatasetError):
        return [None]  # replay_file says why, located
    if groups < 2:
        return [None]
    count = min(groups, most)
    return [tuple(range(groups * k // count, groups * (k + 1) // count)) for k in range(count)]
