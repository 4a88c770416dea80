"""Trajectory datasets made here, in the two public layouts (the schemas of the dataset
cards of ``nebius/SWE-agent-trajectories`` and ``nebius/SWE-rebench-openhands-trajectories``;
their rows are not copied, none is reachable from here): Parquet with a chosen number of
rows per row group, or the same rows as JSON lines.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any


def openhands_row(instance: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """An OpenHands run: assistant messages with tool_calls, each answered by a tool message."""
    trajectory: list[dict[str, Any]] = [
        {"role": "system", "content": "You are OpenHands.", "tool_calls": None},
        {"role": "user", "content": "Fix the issue.", "tool_calls": None},
    ]
    for n, (tool, args) in enumerate(calls):
        call_id = f"toolu_{n:03d}"
        trajectory.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        trajectory.append({"role": "tool", "content": "ok", "name": tool, "tool_call_id": call_id})
    return {
        "instance_id": instance,
        "trajectory_id": f"{instance}-t",
        "repo": "owner/repo",
        "trajectory": trajectory,
        "model_patch": "",
        "resolved": False,
    }


def swe_agent_row(instance: str, actions: list[str]) -> dict[str, Any]:
    """A SWE-agent text-action run: ``ai`` messages whose last code block is the command."""
    trajectory: list[dict[str, Any]] = [
        {
            "role": "system",
            "text": "SETTING: ...",
            "mask": True,
            "system_prompt": "s",
            "cutoff_date": "",
        },
        {
            "role": "user",
            "text": "Issue: ...",
            "mask": True,
            "system_prompt": None,
            "cutoff_date": "",
        },
    ]
    for action in actions:
        trajectory.append(
            {
                "role": "ai",
                "text": f"DISCUSSION\nLet me look.\n\n```\n{action}\n```\n",
                "mask": False,
                "system_prompt": None,
                "cutoff_date": "",
            }
        )
        trajectory.append(
            {
                "role": "user",
                "text": "(Open file: ...)",
                "mask": True,
                "system_prompt": None,
                "cutoff_date": "",
            }
        )
    return {
        "instance_id": instance,
        "model_name": "swe-agent-llama-70b",
        "target": False,
        "trajectory": trajectory,
        "exit_status": "submitted",
        "generated_patch": "",
        "eval_logs": "",
    }


def random_rows(count: int, seed: int = 0, secret: str = "") -> list[dict[str, Any]]:
    """``count`` OpenHands runs, some looping (the same call 2-7 times in a row)."""
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        calls: list[tuple[str, dict[str, Any]]] = []
        for _ in range(rng.randint(1, 8)):
            tool = rng.choice(["execute_bash", "str_replace_editor", "think"])
            args = {"command": f"{secret}step {rng.randint(0, 3)}"}
            calls += [(tool, args)] * rng.choice([1, 1, 1, 2, 3, 5, 7])
        rows.append(openhands_row(f"owner__repo-{n % 7}", calls))
    return rows


def write_parquet(path: Path, rows: list[dict[str, Any]], per_group: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows)
    pq.write_table(table, path, row_group_size=per_group)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
