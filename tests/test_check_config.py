"""``loop-brake check-config`` and ``filter --config``: issue 4's acceptance, from outside.

Most cases run the click command in-process with exact expected output; a few
run the real CLI in a subprocess for exit statuses and the absence of tracebacks.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, cli_env, run_cli

from loop_brake_cli.cli import cli
from loop_brake_cli.config import ConfigError, PluginNotFoundError, max_repeats_for_cli
from loop_brake_cli.core.limits import InvalidMaxRepeatsError

ENV = "DSH_LOOP_BRAKE_MAX_REPEATS"
SAMPLES = ROOT / "samples" / "config"

BUNDLE = """\
# bundle layer
- insert:
    - id: loop-brake
      name: dsh-loop-brake
    - id: other
      name: other-plugin
"""
PROFILE = """\
- id: loop-brake
  config:
    maxRepeats: 4
"""
HOME = """\
# home layer
- id: other
  config:
    token: x
- id: loop-brake
  config:
    maxRepeats: 5
"""
DROP = """\
- id: loop-brake
  config: {}
"""


def invoke(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    """Run ``loop-brake ARGS`` in-process; the environment variable is unset unless given."""
    environ: dict[str, str | None] = {ENV: None}
    environ.update(env or {})
    result = CliRunner().invoke(cli, list(args), env=environ, standalone_mode=False)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    status = result.return_value if result.exception is None else result.exit_code
    return int(status), result.stdout, result.stderr


def refused(*paths: str) -> str:
    """``check-config PATHS`` that must exit 2; its stderr."""
    status, _, err = invoke("check-config", *paths)
    assert status == 2
    return err


@pytest.fixture
def layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write patch layers under tmp_path (the working directory) by relative name."""
    monkeypatch.chdir(tmp_path)

    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return name

    write("bundle/cordis.patch.yml", BUNDLE)
    write("profile/cordis.patch.yml", PROFILE)
    write("home/cordis.patch.yml", HOME)
    return write


THREE = ("bundle/cordis.patch.yml", "profile/cordis.patch.yml", "home/cordis.patch.yml")


def row(config: str) -> str:
    """A one-file composition inserting the row with ``config`` (YAML lines)."""
    body = textwrap.indent(textwrap.dedent(config), " " * 8)
    return f"- insert:\n    - id: loop-brake\n      name: dsh-loop-brake\n      config:\n{body}"


# ---------------------------------------------------------------- acceptance 1: layers


def test_layered_composition_reports_the_last_layer_with_file_and_line(layers) -> None:
    status, out, err = invoke("check-config", *THREE)
    assert status == 0
    assert out == (
        "maxRepeats = 5  (home/cordis.patch.yml:7, row loop-brake)\n"
        "layers touching row loop-brake:\n"
        "  bundle/cordis.patch.yml:3  insert, no config\n"
        "  profile/cordis.patch.yml:1  override (config), sets maxRepeats\n"
        "  home/cordis.patch.yml:5  override (config), sets maxRepeats\n"
    )
    assert err == ""


def test_a_later_override_without_the_key_reports_the_drop_and_the_default(layers) -> None:
    layers("drop.yml", DROP)
    status, out, err = invoke("check-config", *THREE, "drop.yml")
    assert status == 0
    assert out.splitlines()[0] == (
        f"maxRepeats = 3  (default: no maxRepeats in the composed row, {ENV} unset)"
    )
    assert "  drop.yml:1  override (config), replaces the config without maxRepeats" in out
    assert err == (
        "drop.yml:2:3: warning: this override replaces the whole config of row 'loop-brake' "
        "and drops maxRepeats (set at home/cordis.patch.yml:7:5); the brake falls back to the "
        "default 3. Restate maxRepeats in this config to keep it\n"
    )
    assert invoke("check-config", "--strict", *THREE, "drop.yml")[0] == 1


def test_the_drop_names_the_environment_when_it_is_the_fallback(layers) -> None:
    layers("drop.yml", DROP)
    status, out, err = invoke("check-config", *THREE, "drop.yml", env={ENV: "7"})
    assert status == 0
    assert out.startswith(f"maxRepeats = 7  (${ENV}: no maxRepeats in the composed row)\n")
    assert f"falls back to ${ENV} (7)" in err


def test_a_null_config_override_also_drops(layers) -> None:
    layers("null.yml", "- id: loop-brake\n  config:\n")
    status, out, err = invoke("check-config", *THREE, "null.yml")
    assert (status, out.splitlines()[0][:15]) == (0, "maxRepeats = 3 ")
    assert err.startswith("null.yml:2:3: warning: this override replaces the whole config")


def test_an_override_without_config_keeps_it(layers) -> None:
    layers("flag.yml", "- id: loop-brake\n  disabled: false\n")
    status, out, err = invoke("check-config", *THREE, "flag.yml")
    assert status == 0 and err == ""
    assert out.splitlines()[0] == "maxRepeats = 5  (home/cordis.patch.yml:7, row loop-brake)"
    assert out.splitlines()[-1] == "  flag.yml:1  override (disabled)"


# ---------------------------------------------------------------- acceptance 2: errors


@pytest.mark.parametrize(
    ("config", "location", "message"),
    [
        (
            "maxRepeat: 5\n",
            "5:9",
            "unknown key 'maxRepeat' in the config of row 'loop-brake' (its one key is "
            "'maxRepeats'); did you mean 'maxRepeats'? As written, the brake runs without it",
        ),
        ("max_repeats: 5\n", "5:9", "unknown key 'max_repeats'"),
        ("maxRepeats: 0\n", "5:21", "maxRepeats must be at least 1, got 0"),
        ("maxRepeats: -2\n", "5:21", "maxRepeats must be at least 1, got -2"),
        (
            'maxRepeats: "5"\n',
            "5:21",
            'maxRepeats must be an integer of at least 1, got "5" (a string)',
        ),
        ("maxRepeats: 2.5\n", "5:21", "maxRepeats must be a whole number, got 2.5"),
        (
            "maxRepeats: true\n",
            "5:21",
            "maxRepeats must be an integer of at least 1, got true (a boolean)",
        ),
        ("maxRepeats: yes\n", "5:21", 'got "yes" (a string)'),
        ("maxRepeats:\n", "5:20", "got null"),
        ("maxRepeats: [5]\n", "5:21", "must be an integer of at least 1, got a list"),
    ],
)
def test_invalid_config_exits_2_with_file_line_column(
    layers, config: str, location: str, message: str
) -> None:
    name = layers("p.yml", row(config))
    status, out, err = invoke("check-config", name)
    assert status == 2
    assert out == ""
    assert err.startswith(f"p.yml:{location}: error: ")
    assert message in err
    assert "Traceback" not in err


def test_unrelated_keys_get_no_suggestion_and_every_problem_is_listed(layers) -> None:
    name = layers("p.yml", row("verbose: true\nmaxRepeats: 0\n"))
    assert refused(name) == (
        "p.yml:5:9: error: unknown key 'verbose' in the config of row 'loop-brake' "
        "(its one key is 'maxRepeats')\n"
        "p.yml:6:21: error: maxRepeats must be at least 1, got 0\n"
    )


def test_broken_yaml_exits_2_with_file_line_column(layers) -> None:
    name = layers("broken.yml", "- insert:\n    - id: loop-brake\n      config: {maxRepeats: 5\n")
    status, out, err = invoke("check-config", name)
    assert (status, out) == (2, "")
    assert re.fullmatch(r"broken\.yml:\d+:\d+: error: YAML syntax error: .+\n", err)


def test_config_that_is_not_a_mapping_exits_2(layers) -> None:
    name = layers("p.yml", row("- 5\n"))
    assert (
        refused(name)
        == "p.yml:5:9: error: config of row 'loop-brake' must be a mapping, not a list\n"
    )


def test_integral_float_counts_and_core_schema_integers(layers) -> None:
    assert invoke("check-config", layers("a.yml", row("maxRepeats: 5.0\n")))[1].startswith(
        "maxRepeats = 5  (a.yml:5, row loop-brake)"
    )
    # YAML 1.2 core schema, as the harness's loader: a leading zero is still decimal.
    assert invoke("check-config", layers("b.yml", row("maxRepeats: 010\n")))[1].startswith(
        "maxRepeats = 10  "
    )


def test_python_object_tags_are_refused_and_nothing_is_constructed(layers, tmp_path) -> None:
    marker = tmp_path / "constructed"
    name = layers(
        "evil.yml",
        f'- !!python/object/apply:os.system ["touch {marker}"]\n'
        "- insert:\n    - id: loop-brake\n      config: !!python/object:builtins.dict {}\n",
    )
    status, out, err = invoke("check-config", name)
    assert status == 2
    assert err == (
        "evil.yml:1:3: error: YAML tag !!python/object/apply:os.system is not allowed in a "
        "patch file (nothing is constructed from it)\n"
        "evil.yml:4:15: error: YAML tag !!python/object:builtins.dict is not allowed in a "
        "patch file (nothing is constructed from it)\n"
    )
    assert not marker.exists()


def test_duplicate_keys_are_an_error_as_in_the_harness_loader(layers) -> None:
    name = layers("dup.yml", row("maxRepeats: 4\nmaxRepeats: 5\n"))
    assert refused(name) == "dup.yml:6:9: error: duplicate key 'maxRepeats' in a mapping\n"


def test_a_top_level_mapping_is_an_error(layers) -> None:
    name = layers("map.yml", "id: loop-brake\nconfig: {maxRepeats: 5}\n")
    assert (
        refused(name)
        == "map.yml:1:1: error: a patch file must be a top-level YAML list of entries\n"
    )


def test_errors_never_echo_other_config_values(layers) -> None:
    secret = "SECRET-CANARY-7f3a"
    name = layers(
        "p.yml",
        row(f"apiKey: {secret}\nmaxRepeats: 2\n")
        + f"- insert:\n    - id: x\n      config: {{token: '{secret}\n",
    )
    status, out, err = invoke("check-config", name)
    assert status == 2 and secret not in out + err
    name = layers("q.yml", row(f"apiKey: {secret}\n"))
    for args in (("check-config", name), ("check-config", "--json", name)):
        status, out, err = invoke(*args)
        assert status == 2 and secret not in out + err
        assert "apiKey" in out + err


# ---------------------------------------------------------------- acceptance 3: options


def test_expect(layers) -> None:
    assert invoke("check-config", "--expect", "5", *THREE)[0] == 0
    status, _, err = invoke("check-config", "--expect", "3", *THREE)
    assert status == 1
    assert err == (
        "loop-brake check-config: expected maxRepeats = 3, the composition gives 5 "
        "(home/cordis.patch.yml:7, row loop-brake)\n"
    )


@pytest.mark.parametrize(
    ("value", "warning"),
    [
        ("1", "maxRepeats is 1: every call is denied, even the first of a streak"),
        ("51", "maxRepeats is 51, above 50: a brake that rarely bites"),
    ],
)
def test_strict_turns_warnings_into_exit_1(layers, value: str, warning: str) -> None:
    name = layers("p.yml", row(f"maxRepeats: {value}\n"))
    status, _, err = invoke("check-config", name)
    assert status == 0
    assert err.startswith(f"p.yml:5:9: warning: {warning}")
    status, _, err = invoke("check-config", "--strict", name)
    assert status == 1
    assert err.endswith("loop-brake check-config: 1 warning(s) and --strict\n")
    assert invoke("check-config", "--strict", layers("ok.yml", row("maxRepeats: 50\n")))[0] == 0


def test_unknown_entry_kinds_are_skipped_with_a_warning_naming_the_line(layers) -> None:
    name = layers("p.yml", row("maxRepeats: 4\n") + "- just a string\n- name: no-id\n")
    status, out, err = invoke("check-config", name)
    assert status == 0
    assert out.startswith("maxRepeats = 4  ")
    assert err == (
        "p.yml:6:3: warning: line 6: entry is not a mapping; skipped\n"
        "p.yml:7:3: warning: line 7: entry is neither an insert nor an id-targeted override; "
        "skipped\n"
    )
    assert invoke("check-config", "--strict", name)[0] == 1


def test_environment_is_read_only_when_the_row_lacks_the_key(layers) -> None:
    bare = layers("bare.yml", "- insert:\n    - id: loop-brake\n      name: dsh-loop-brake\n")
    status, out, _ = invoke("check-config", bare, env={ENV: " 8 "})
    assert (status, out.splitlines()[0]) == (
        0,
        f"maxRepeats = 8  (${ENV}: no maxRepeats in the composed row)",
    )
    # The row sets the key: the environment is not read, so even garbage is no error.
    status, out, _ = invoke("check-config", *THREE, env={ENV: "lots"})
    assert (status, out.splitlines()[0][:16]) == (0, "maxRepeats = 5  ")
    # Empty means unset.
    assert invoke("check-config", bare, env={ENV: ""})[1].startswith(
        f"maxRepeats = 3  (default: no maxRepeats in the composed row, {ENV} empty)"
    )


def test_invalid_environment_is_an_error_only_when_it_would_be_read(layers) -> None:
    bare = layers("bare.yml", "- insert:\n    - id: loop-brake\n")
    status, out, err = invoke("check-config", bare, env={ENV: "lots"})
    assert (status, out) == (2, "")
    assert err == (
        f'loop-brake check-config: error: invalid maxRepeats from ${ENV}: "lots" '
        "(must be a base-10 integer of at least 1; read because the composed row "
        "'loop-brake' sets no maxRepeats)\n"
    )
    assert invoke("check-config", bare, env={ENV: "0"})[0] == 2


def test_no_env_ignores_the_environment(layers) -> None:
    bare = layers("bare.yml", "- insert:\n    - id: loop-brake\n")
    for value in ("8", "lots"):
        status, out, _ = invoke("check-config", "--no-env", bare, env={ENV: value})
        assert status == 0
        assert out.splitlines()[0] == (
            f"maxRepeats = 3  (default: no maxRepeats in the composed row, {ENV} ignored "
            "(--no-env))"
        )


def test_missing_row_exits_4(layers) -> None:
    other = layers("other.yml", "- insert:\n    - id: other\n      name: other-plugin\n")
    status, out, err = invoke("check-config", other)
    assert (status, out) == (4, "")
    assert err == (
        "loop-brake check-config: error: no loop-brake row (dsh-loop-brake) in the "
        "composition of other.yml\n"
    )
    status, _, err = invoke("check-config", "profile/cordis.patch.yml")
    assert status == 4
    assert "the override at profile/cordis.patch.yml:1:3 has nothing to target" in err


def test_json_report_fields(layers) -> None:
    layers("drop.yml", DROP)
    status, out, err = invoke("check-config", "--json", "--expect", "5", *THREE)
    assert (status, err) == (0, "")
    report = json.loads(out)
    assert report["status"] == 0
    assert report["value"] == 5
    assert report["source"] == "config"
    assert (report["file"], report["line"], report["column"]) == ("home/cordis.patch.yml", 7, 5)
    assert report["row"] == "loop-brake"
    assert report["expect"] == 5
    assert report["files"] == list(THREE)
    assert [(t["action"], t["file"], t["line"], t["setsMaxRepeats"]) for t in report["layers"]] == [
        ("insert", "bundle/cordis.patch.yml", 3, False),
        ("override", "profile/cordis.patch.yml", 1, True),
        ("override", "home/cordis.patch.yml", 5, True),
    ]
    assert report["warnings"] == [] and report["errors"] == []

    report = json.loads(invoke("check-config", "--json", "--strict", *THREE, "drop.yml")[1])
    assert (report["status"], report["value"], report["source"]) == (1, 3, "default")
    assert report["file"] is None
    assert [(w["file"], w["line"]) for w in report["warnings"]] == [("drop.yml", 2)]

    name = layers("bad.yml", row("maxRepeats: 0\n"))
    status, out, err = invoke("check-config", "--json", name)
    report = json.loads(out)
    assert (status, err, report["status"], report["value"]) == (2, "", 2, None)
    assert report["errors"] == [
        {
            "message": "maxRepeats must be at least 1, got 0",
            "file": "bad.yml",
            "line": 5,
            "column": 21,
        }
    ]


# ---------------------------------------------------------------- files and composition


def test_without_files_reads_cordis_patch_yml_here(layers) -> None:
    assert refused() == (
        "loop-brake check-config: error: no PATCH_FILE given and no ./cordis.patch.yml here; "
        "name the patch layers in composition order\n"
    )
    layers("cordis.patch.yml", row("maxRepeats: 6\n"))
    status, out, _ = invoke("check-config")
    assert (status, out.splitlines()[0]) == (
        0,
        "maxRepeats = 6  (cordis.patch.yml:5, row loop-brake)",
    )


def test_a_missing_file_is_unreadable_input_exit_3(layers) -> None:
    """As for filter and replay: a file that cannot be opened is exit 3, not a usage error."""
    status, out, err = invoke("check-config", "nope.yml")
    assert (status, out) == (3, "")
    assert (
        err == "loop-brake check-config: error: cannot open nope.yml: No such file or directory\n"
    )
    status, out, err = invoke("check-config", "--json", "nope.yml")
    assert (status, err) == (3, "")
    doc = json.loads(out)
    assert doc["status"] == 3 and doc["error"] == "cannot open nope.yml: No such file or directory"


def test_insert_into_a_group_and_a_group_config_replacement(layers) -> None:
    group = layers(
        "group.yml",
        """\
        - insert:
            - id: tools
              name: cordis:group
              group: true
              config: []
        - id: tools
          insert:
            - id: loop-brake
              name: dsh-loop-brake
              config: {maxRepeats: 6}
        """,
    )
    assert invoke("check-config", group)[1].startswith("maxRepeats = 6  (group.yml:10, row ")
    # Replacing the group's config replaces its rows: the brake is gone.
    layers("regroup.yml", "- id: tools\n  config: []\n")
    assert invoke("check-config", group, "regroup.yml")[0] == 4


def test_name_mismatch_skips_the_override_with_a_warning(layers) -> None:
    layers("wrong.yml", "- id: loop-brake\n  name: something-else\n  config: {maxRepeats: 9}\n")
    status, out, err = invoke("check-config", *THREE, "wrong.yml")
    assert status == 0
    assert out.startswith("maxRepeats = 5  ")
    assert err == (
        "wrong.yml:1:3: warning: override of row 'loop-brake' names plugin 'something-else', "
        "not the row's; the harness skips it\n"
    )


def test_a_row_found_by_plugin_name_and_a_disabled_row(layers) -> None:
    name = layers(
        "named.yml",
        "- insert:\n    - id: brake\n      name: github:jwilson411/dsh-loop-brake\n"
        "      disabled: true\n      config: {maxRepeats: 4}\n",
    )
    status, out, err = invoke("check-config", name)
    assert status == 0
    assert out.startswith("maxRepeats = 4  (named.yml:5, row brake)")
    assert err == (
        "named.yml:4:7: warning: row 'brake' is disabled: the brake does not run at all\n"
    )


# ---------------------------------------------------------------- the library


def test_max_repeats_for_cli_precedence(layers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "9")
    assert max_repeats_for_cli(2, THREE) == (2, "--max-repeats")
    assert max_repeats_for_cli(None, THREE) == (5, "home/cordis.patch.yml:7, row loop-brake")
    bare = layers("bare.yml", "- insert:\n    - id: loop-brake\n")
    assert max_repeats_for_cli(None, [bare]) == (9, f"${ENV}")
    assert max_repeats_for_cli(None, [bare], use_env=False) == (3, "default")
    assert max_repeats_for_cli(None, []) == (9, f"${ENV}")
    monkeypatch.delenv(ENV)
    assert max_repeats_for_cli(None, [bare]) == (3, "default")
    with pytest.raises(InvalidMaxRepeatsError):
        max_repeats_for_cli(0, THREE)
    with pytest.raises(PluginNotFoundError):
        max_repeats_for_cli(None, ["profile/cordis.patch.yml"])
    with pytest.raises(ConfigError) as info:
        max_repeats_for_cli(None, [layers("bad.yml", row("maxRepeats: 0\n"))])
    assert str(info.value) == "bad.yml:5:21: maxRepeats must be at least 1, got 0"


def test_config_module_imports_neither_click_nor_rich() -> None:
    code = (
        "import sys, loop_brake_cli.config as c; "
        "print(sorted(m for m in ('click', 'rich', 'yaml') if m in sys.modules))"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- acceptance 4: filter --config

EVENT = b'{"tool": "search", "args": {"q": "weather"}, "sessionId": "s1"}\n'


def test_filter_config_uses_the_composed_value_and_summary_names_it(layers) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["filter", "--summary", "--only", "deny", *sum((["--config", p] for p in THREE), [])],
        input=EVENT * 5,
        env={ENV: None},
        standalone_mode=False,
    )
    assert result.exception is None, result.exception
    assert result.return_value == 0
    denials = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(d["count"], d["maxRepeats"]) for d in denials] == [(5, 5)]
    assert "maxRepeats = 5 (home/cordis.patch.yml:7, row loop-brake)" in result.stderr


def test_filter_max_repeats_flag_beats_the_config(layers) -> None:
    result = CliRunner().invoke(
        cli,
        ["filter", "--summary", "-m", "2", "--config", THREE[0], "--config", THREE[2]],
        input=EVENT * 2,
        env={ENV: None},
        standalone_mode=False,
    )
    assert result.return_value == 0
    assert '"verdict":"deny"' in result.stdout
    assert "maxRepeats = 2 (--max-repeats)" in result.stderr


def test_filter_config_error_exits_2_before_reading_input(layers) -> None:
    name = layers("bad.yml", row('maxRepeats: "5"\n'))
    result = CliRunner().invoke(
        cli, ["filter", "--config", name], input=EVENT, env={ENV: None}, standalone_mode=False
    )
    assert result.return_value == 2
    assert result.stdout == ""
    assert result.stderr == (
        "loop-brake filter: bad.yml:5:21: maxRepeats must be an integer of at least 1, "
        'got "5" (a string)\n'
    )


# ---------------------------------------------------------------- real subprocesses


def test_subprocess_exit_statuses_and_no_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("- insert: [\n", encoding="utf-8")
    other = tmp_path / "other.yml"
    other.write_text("- insert:\n    - id: other\n", encoding="utf-8")
    good = tmp_path / "good.yml"
    good.write_text(row("maxRepeats: 5\n"), encoding="utf-8")
    for path, status in ((broken, 2), (other, 4), (good, 0)):
        proc = run_cli("check-config", str(path))
        assert proc.returncode == status, proc.stderr
        assert b"Traceback" not in proc.stderr
    proc = run_cli("check-config", "--expect", "4", str(good))
    assert proc.returncode == 1
    assert run_cli("check-config", str(good), env=cli_env(**{ENV: "x"})).returncode == 0


def test_subprocess_filter_config(tmp_path: Path) -> None:
    good = tmp_path / "good.yml"
    good.write_text(row("maxRepeats: 2\n"), encoding="utf-8")
    proc = run_cli("filter", "--config", str(good), "--fail-on-deny", input=EVENT * 2)
    assert proc.returncode == 1
    assert proc.stdout.count(b'"verdict":"deny"') == 1


# ---------------------------------------------------------------- samples/config/README.md


def _readme_sessions() -> list[tuple[str, str, int]]:
    """Each ``$ loop-brake ...`` in the samples README, its output and ``echo $?``."""
    text = (SAMPLES / "README.md").read_text(encoding="utf-8")
    sessions = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        parts = re.split(r"^\$ ", block, flags=re.M)[1:]
        for command, status in zip(parts[::2], parts[1::2], strict=True):
            line, _, output = command.partition("\n")
            assert status.startswith("echo $?\n"), status
            sessions.append((line, output, int(status.split("\n")[1])))
    return sessions


def test_samples_readme_sessions_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SAMPLES)
    sessions = _readme_sessions()
    assert len(sessions) >= 5
    for line, output, expected in sessions:
        args = line.split()
        assert args[0] == "loop-brake"
        status, out, err = invoke(*args[1:])
        assert (status, out + err) == (expected, output), line


# ---------------------------------------------------------------- ecosystem files


def test_pre_commit_hook_definition() -> None:
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "loop-brake-config"]
    assert hook["entry"] == "loop-brake check-config"
    assert hook["language"] == "python"
    files = re.compile(hook["files"])
    for name in ("cordis.patch.yml", "profile/cordis.patch.yaml"):
        assert files.search(name)
    for name in ("cordis.patch.yml.bak", "other.yml"):
        assert not files.search(name)


def test_control_characters_and_bad_utf8_are_located(layers, tmp_path: Path) -> None:
    (tmp_path / "ctrl.yml").write_bytes(b"- insert:\n    - id: loop-brake\n      x: a\x01\n")
    assert refused("ctrl.yml") == (
        "ctrl.yml:3:11: error: YAML syntax error: a character YAML does not allow (#x0001)\n"
    )
    (tmp_path / "latin.yml").write_bytes(b"- insert:\n    - id: caf\xe9\n")
    assert refused("latin.yml") == "latin.yml:2:14: error: not UTF-8 text\n"


def test_a_disabled_group_disables_the_row(layers) -> None:
    name = layers(
        "g.yml",
        """\
        - insert:
            - id: tools
              name: cordis:group
              disabled: true
              config:
                - id: loop-brake
                  name: dsh-loop-brake
                  config: {maxRepeats: 4}
        """,
    )
    status, out, err = invoke("check-config", "--strict", name)
    assert status == 1
    assert out.startswith("maxRepeats = 4  (g.yml:8, row loop-brake)")
    assert err.startswith(
        "g.yml:4:7: warning: its group 'tools' is disabled: the brake does not run at all\n"
    )
