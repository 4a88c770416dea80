"""``replay --html``: the page as a file (what it holds, how it is written) and the CLI around it.

The page's behaviour in a browser is tests/test_html_browser.py; here the real
CLI runs in a subprocess and the written bytes are read back.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from loop_brake_cli.render.html import embed_json

CANARY = "CANARY-html-7f3e1b9c"
STUCK = ROOT / "samples" / "stuck-agent.jsonl"
HOSTILE_SESSION = "</script><script>window.__pwned=1</script>"
HOSTILE_TOOL = '<img src=x onerror="window.__pwned=2">&amp;'


def page_json(html: str) -> dict:
    """The page data embedded in ``html`` (exactly one block)."""
    (block,) = re.findall(
        r'<script type="application/json" id="lb-data">(.*?)</script>', html, re.DOTALL
    )
    return json.loads(block)


def events(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_embed_json_is_inert_in_a_script_element() -> None:
    value = {
        "s": "</script><!-- <script>&amp;",
        "u": "\u2028\u2029é",
        "bad": "\udcff",  # a lone surrogate, as an undecodable name can give
    }
    text = embed_json(value)
    assert not set(text) & {"<", ">", "&"}
    assert text.isascii() and "\u2028" not in text
    assert json.loads(text) == value


def test_html_file_beside_the_summary(tmp_path: Path) -> None:
    plain = run_cli("replay", str(STUCK))
    out = tmp_path / "report.html"
    result = run_cli("replay", str(STUCK), "--html", str(out))
    assert result.returncode == plain.returncode == 0
    assert result.stdout == plain.stdout and plain.stderr == b""
    assert result.stderr == f"loop-brake replay: wrote {out}\n".encode()
    assert os.listdir(tmp_path) == ["report.html"]  # no temporary file left behind
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</html>\n")
    data = page_json(html)
    # line 9 repeats line 8's call id: the same call logged twice, one call everywhere
    assert data["totals"]["calls"] == 10 and data["totals"]["denied"] == 2
    assert data["totals"]["duplicates"] == 1
    (session,) = data["sessions"]
    timeline = session["tl"]
    assert len(timeline["t"]) == 10 and timeline["v"] == "ppppppddpp"
    assert timeline["st"] == [[4, 4]]  # lines 5-8: counts 1, 2, 3, 4
    assert [timeline["o"][i] for i in timeline["fd"]] == [7]  # the third identical call
    assert timeline["w"] == [[7, 1]]  # line 8 (line 9 is the same call logged twice)
    assert session["wc"] == 1
    assert [data["tools"][t] for t in timeline["t"][:2]] == ["read_file", "run_command"]


def test_html_to_stdout_is_stdouts_only_content(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert run_cli("replay", str(STUCK), "--html", str(out)).returncode == 0
    result = run_cli("replay", str(STUCK), "--html", "-")
    assert result.returncode == 0 and result.stderr == b""
    assert result.stdout == out.read_bytes()  # the page, and no summary around it


def test_html_is_replaced_atomically(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("old report")
    before = out.stat().st_ino
    assert run_cli("replay", str(STUCK), "--html", str(out)).returncode == 0
    assert out.stat().st_ino != before  # a new file renamed over the old one
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(os.listdir(tmp_path)) == ["report.html"]


def test_html_that_cannot_be_written_is_one_line_and_exit_5(tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "report.html"
    result = run_cli("replay", str(STUCK), "--html", str(target))
    assert result.returncode == 5
    assert result.stderr.decode() == (
        f"loop-brake replay: cannot write {target}: No such file or directory\n"
    )
    assert b"Traceback" not in result.stderr and not target.parent.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--verdicts",), "--html draws the summary's report, not --verdicts"),
        (("--compare-policy", "p.toml"), "--html draws the summary's report, not --compare-policy"),
    ],
)
def test_html_is_not_for_other_outputs(
    tmp_path: Path, extra: tuple[str, ...], message: str
) -> None:
    result = run_cli("replay", str(STUCK), "--html", str(tmp_path / "r.html"), *extra)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode() == f"loop-brake replay: {message}\n"
    assert os.listdir(tmp_path) == []


def test_html_to_stdout_and_json_exclude_each_other() -> None:
    result = run_cli("replay", str(STUCK), "--html", "-", "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"].startswith("--html - and --json")


def test_html_beside_json(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = run_cli("replay", str(STUCK), "--json", "--html", str(out))
    assert result.returncode == 0 and json.loads(result.stdout)["totals"]["calls"] == 10
    assert page_json(out.read_text(encoding="utf-8"))["totals"]["calls"] == 10


def test_html_of_a_directory_is_the_same_with_workers(tmp_path: Path) -> None:
    one, two = tmp_path / "one.html", tmp_path / "two.html"
    samples = str(ROOT / "samples")
    first = run_cli("replay", samples, "--html", str(one))
    second = run_cli("replay", samples, "--html", str(two), "-j", "2")
    assert first.returncode == second.returncode == 0
    assert one.read_bytes() == two.read_bytes()
    data = page_json(one.read_text(encoding="utf-8"))
    assert data["totals"]["files"] >= 15 and data["base"] == samples
    assert all(not name.startswith("/") for name in data["files"])
    assert sum(len(s["tl"]["t"]) for s in data["sessions"]) == data["totals"]["calls"]


def test_html_under_a_policy(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[tools]]\nmatch = "run_command"\nmax_repeats = 2\n')
    out = tmp_path / "r.html"
    result = run_cli("replay", str(STUCK), "--policy", str(policy), "--html", str(out))
    assert result.returncode == 0, result.stderr
    data = page_json(out.read_text(encoding="utf-8"))
    assert data["policy"] == str(policy)
    (session,) = data["sessions"]
    assert [session["tl"]["o"][i] for i in session["tl"]["fd"]] == [6]  # denied at count 2
    assert "warned" not in data["totals"]  # no warn_at: nothing to say


def test_html_under_warn_at_counts_the_warned_calls(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("warn_at = 2\n")
    out = tmp_path / "r.html"
    result = run_cli("replay", str(STUCK), "--policy", str(policy), "-m", "4", "--html", str(out))
    assert result.returncode == 0, result.stderr
    data = page_json(out.read_text(encoding="utf-8"))
    summary = run_cli("replay", str(STUCK), "--policy", str(policy), "-m", "4", "--json")
    assert data["totals"]["warned"] == json.loads(summary.stdout)["totals"]["warned"] == 2


def test_hostile_names_stay_inside_the_json(tmp_path: Path) -> None:
    source = events(
        tmp_path / "hostile.jsonl",
        [{"tool": HOSTILE_TOOL, "args": {"n": 1}, "sessionId": HOSTILE_SESSION}] * 3,
    )
    out = tmp_path / "r.html"
    assert run_cli("replay", str(source), "--html", str(out)).returncode == 0
    html = out.read_text(encoding="utf-8")
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "<img" not in html and "__pwned" in html  # only as escaped JSON text
    data = page_json(html)
    assert data["sessions"][0]["s"] == HOSTILE_SESSION and data["tools"] == [HOSTILE_TOOL]


def test_canary_in_arguments_and_results_is_nowhere(tmp_path: Path) -> None:
    """Claude Code transcripts carry both arguments and results; neither reaches the page.
    The bundled sample, every call's input and every result replaced by the canary."""
    lines = []
    sample = ROOT / "samples" / "formats" / "claude-code.jsonl"
    for line in sample.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        content = record.get("message", {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                block["input"] = {"command": f"echo {CANARY}"}
            elif block.get("type") == "tool_result":
                block["content"] = CANARY
        lines.append(record)
    source = events(tmp_path / "session.jsonl", lines)
    out = tmp_path / "r.html"
    result = run_cli("replay", str(source), "--html", str(out))
    assert result.returncode == 0, result.stderr
    assert page_json(out.read_text(encoding="utf-8"))["totals"]["denied"] >= 1
    to_stdout = run_cli("replay", str(source), "--html", "-")
    for blob in (out.read_bytes(), result.stdout, result.stderr, to_stdout.stdout):
        assert CANARY.encode() not in blob


def test_waste_figures_are_the_json_documents(tmp_path: Path) -> None:
    """Tokens and cost per session come from the same waste as --json, at the user's prices."""
    sample = str(ROOT / "tests" / "fixtures" / "waste" / "claude-code-loop.jsonl")
    prices = ("--prices", str(ROOT / "samples" / "prices.example.toml"))
    out = tmp_path / "r.html"
    result = run_cli("replay", sample, *prices, "--json", "--html", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    data = page_json(out.read_text(encoding="utf-8"))
    assert data["currency"] == "USD" and data["prices"] == prices[1]
    for session, row in zip(doc["sessions"], data["sessions"], strict=True):
        waste = session["waste"]
        kinds = ("input", "output", "cacheRead", "cacheWrite")
        assert row["wc"] == waste["calls"]
        if not waste["usageRecorded"]:
            assert row["wt"] is None and row["wd"] is None  # not 0
            continue
        # fresh tokens in one figure, cache reads apart (they cost a fraction)
        assert row["wt"] == sum(waste["tokens"][kind] or 0 for kind in kinds if kind != "cacheRead")
        assert row["wr"] == waste["tokens"]["cacheRead"]
        assert round(row["wd"], 6) == waste["cost"]["amount"]
    assert data["totals"]["wasteCalls"] == doc["waste"]["calls"] > 0
    assert data["totals"]["wasteTokens"] > 0 and data["totals"]["wasteDollars"] > 0
    plain = page_json(run_cli("replay", sample, "--html", "-").stdout.decode())
    assert plain["currency"] is None and plain["sessions"][0]["wd"] is None


def test_no_usage_recorded_is_not_zero(tmp_path: Path) -> None:
    data = page_json(run_cli("replay", str(STUCK), "--html", "-").stdout.decode())
    assert data["sessions"][0]["wc"] == 1
    assert data["sessions"][0]["wt"] is None and data["totals"]["wasteTokens"] is None


def test_a_session_across_files_names_each_calls_file(tmp_path: Path) -> None:
    """--continue-sessions: one session's calls come from two files; each call keeps its own."""
    row = {"tool": "search", "args": {"q": 1}, "sessionId": "s"}
    first = events(tmp_path / "a.jsonl", [row, row])
    second = events(tmp_path / "b.jsonl", [row, row])
    result = run_cli("replay", str(first), str(second), "--continue-sessions", "--html", "-")
    assert result.returncode == 0, result.stderr
    data = page_json(result.stdout.decode())
    (session,) = data["sessions"]
    timeline = session["tl"]
    assert [data["files"][i] for i in timeline["fi"]] == ["a.jsonl"] * 2 + ["b.jsonl"] * 2
    assert timeline["o"] == [1, 2, 1, 2] and timeline["st"] == [[0, 4]]
    assert [timeline["o"][i] for i in timeline["fd"]] == [1]  # the 3rd call: b.jsonl's first
