"""``args_ignore`` (issue 29, item 5): argument paths removed before hashing, per tool rule.

* the path subset: what parses (round trip from drawn steps) and what is refused, said;
* a brute-force reference: every location of a drawn argument tree matched against the
  path's steps by definition, the matched ones left out of a deep copy, then hashed,
  must equal what the engine counts (``Policy.args_digest``); arguments never change;
* the loader: every malformed key located ``file:line:col`` in ``check-config --policy``
  and refused by every command that loads a policy;
* the hash contract: a tool without the key hashes as ``canonical.call_hash``, and a
  policy hash is marked (``policyHash``, the denial text) everywhere it is counted.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli import LoopBrake
from loop_brake_cli.core.canonical import call_digest, call_hash, canonical_json
from loop_brake_cli.core.policy import parse_policy
from loop_brake_cli.core.policy.args_paths import (
    MAX_ARGS_IGNORE,
    WILDCARD,
    PathError,
    parse_path,
    strip,
)

CANARY = "canary-5d1c-args-ignore-secret"

# ---------------------------------------------------------------- the path subset

PARSED = [
    ("$.a", ("a",)),
    ("$.a.b", ("a", "b")),
    ("$.a[0]", ("a", 0)),
    ("$.a[*].b", ("a", WILDCARD, "b")),
    ("$.a.*", ("a", WILDCARD)),
    ('$["x.y"]', ("x.y",)),
    ("$['x.y']", ("x.y",)),
    ("$['it\\'s']", ("it's",)),
    ('$["\\u00e9"]', ("\u00e9",)),
    ('$["0"]', ("0",)),
    ("$[12]", (12,)),
    ("$.x-request-id", ("x-request-id",)),
    ("$.\u00e9t\u00e9", ("\u00e9t\u00e9",)),
]


@pytest.mark.parametrize(("text", "steps"), PARSED)
def test_supported_paths_parse(text: str, steps: tuple) -> None:
    assert parse_path(text) == steps


REFUSED = [
    ("", "is empty"),
    ("$", "names the whole arguments"),
    ("a.b", 'must start with "$"'),
    ("$..a", "recursive descent"),
    ("$.a[?(@.b)]", "filters"),
    ("$.a[1:3]", "slices"),
    ("$.a[0,1]", "unions"),
    ("$.a[-1]", "negative indices"),
    ("$.a[01]", "leading zero"),
    ("$.a[", 'unclosed "["'),
    ("$.a[0", 'unclosed "["'),
    ('$["a', "unclosed quoted name"),
    ("$['a\\x']", "only"),
    ("$.", "expected a member name"),
    ("$.x.y z", "unexpected"),
    ("$" + ".a" * 40, "more than 32 steps"),
    ("$." + "a" * 600, "longer than 512"),
]


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_unsupported_paths_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(PathError) as caught:
        parse_path(text)
    assert reason in str(caught.value)


# ---------------------------------------------------------------- the reference

KEYS = ["a", "b", "ts", "x.y", "0", "", "é"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([1.5, -0.0]), st.text(max_size=3)
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=25,
)
steps = st.one_of(st.sampled_from(KEYS), st.integers(0, 3), st.just(WILDCARD))
paths = st.lists(steps, min_size=1, max_size=4).map(tuple)


def render(path: tuple) -> str:
    """A path's text: dot form for a plain name, brackets otherwise (both quotes)."""
    out = "$"
    for step in path:
        if step is WILDCARD:
            out += ".*" if len(out) % 2 else "[*]"
        elif isinstance(step, int):
            out += f"[{step}]"
        elif step and all(ch.isalnum() or ch in "_-" for ch in step):
            out += "." + step
        elif len(out) % 2:
            out += json.dumps(step, ensure_ascii=False).join("[]")
        else:
            out += "['" + step.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


def locations(value: object, at: tuple = ()) -> list[tuple]:
    """Every location below the root: object members by key, array elements by index."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += [at + (key,), *locations(item, at + (key,))]
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += [at + (index,), *locations(item, at + (index,))]
    return found


def matches(path: tuple, location: tuple) -> bool:
    """The definition: one step per level; a name matches that member, an index that
    element, ``*`` any member or element."""
    return len(path) == len(location) and all(
        step is WILDCARD or (type(step) is type(part) and step == part)
        for step, part in zip(path, location, strict=True)
    )


def reference_strip(value: object, chosen: list[tuple]) -> object:
    """A deep copy without every location any path matches (matched on the original)."""
    gone = {loc for loc in locations(value) if any(matches(path, loc) for path in chosen)}

    def rebuild(node: object, at: tuple) -> object:
        if isinstance(node, dict):
            return {k: rebuild(v, at + (k,)) for k, v in node.items() if at + (k,) not in gone}
        if isinstance(node, list):
            return [rebuild(v, at + (i,)) for i, v in enumerate(node) if at + (i,) not in gone]
        return node

    return rebuild(copy.deepcopy(value), ())


def policy_text(texts: list[str], match: str = "probe", extra: str = "") -> str:
    quoted = ", ".join(json.dumps(text, ensure_ascii=False) for text in texts)
    return f'[[tools]]\nmatch = "{match}"\n{extra}args_ignore = [{quoted}]\n'


@settings(max_examples=400, deadline=None, derandomize=True)
@given(args=trees, chosen=st.lists(paths, min_size=1, max_size=4, unique=True))
def test_engine_equals_the_brute_force_reference(args: object, chosen: list[tuple]) -> None:
    texts = [render(path) for path in chosen]
    assert [parse_path(text) for text in texts] == chosen  # the written form round-trips
    policy, _ = parse_policy(policy_text(texts), "p.toml")
    before = canonical_json(args)
    expected = call_digest("probe", reference_strip(args, chosen))
    assert policy.args_digest("probe", args) == expected
    assert LoopBrake(policy=policy).digest("probe", args) == expected
    assert canonical_json(args) == before  # never changed in place
    # another tool keeps the contract's hash
    assert policy.args_digest("other", args) == call_digest("other", args)


def test_a_path_that_reaches_nothing_keeps_the_contract_hash() -> None:
    args = {"a": [1, {"b": 2}], "c": "x"}
    assert strip(args, (("zz",), ("a", 5), ("a", "b"), ("c", 0), (0,))) is args
    policy, _ = parse_policy(policy_text(["$.zz", "$.a[5]", "$.c[0]"]), "p.toml")
    assert policy.args_digest("probe", args).hex() == call_hash("probe", args)


def test_paths_are_matched_on_the_original_then_removed_together() -> None:
    args = {"a": [10, 11, 12, 13]}
    assert strip(args, (("a", 0), ("a", 1))) == {"a": [12, 13]}
    assert strip(args, (("a", 0), ("a", WILDCARD))) == {"a": []}
    assert strip({"a": {"b": 1}}, (("a",), ("a", "b"))) == {}
    assert strip("not an object", (("a",),)) == "not an object"


# ---------------------------------------------------------------- the loader


def check(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    done = run_cli("check-config", "--policy", str(path))
    return done.returncode, done.stdout.decode() + done.stderr.decode()


BAD = (
    "[[tools]]\n"  # 1
    'match = "http_*"\n'  # 2
    'args_ignore = ["$.ts", "$..a",\n'  # 3: "$..a" at column 24, its ".." at 26
    '  7, "$"]\n'  # 4: 7 at column 3, "$" at column 6
    "[[tools]]\n"  # 5
    'match = "b"\n'  # 6
    "args_ignore = []\n"  # 7
    "[[tools]]\n"  # 8
    'match = "c"\n'  # 9
    'args_ignore = "$.ts"\n'  # 10
    "[[tools]]\n"  # 11
    'match = "d"\n'  # 12
    "exempt = true\n"  # 13
    'args_ignore = ["$.ts"]\n'  # 14
    "[[tools]]\n"  # 15
    'match = "e"\n'  # 16
    "args_ignore = [" + ", ".join(f'"$.k{n}"' for n in range(MAX_ARGS_IGNORE + 1)) + "]\n"
    "[[tools]]\n"  # 18
    'match = "f"\n'  # 19
    "    args_ignore = ['$.a', '$.a[x]', \"$.a\"]\n"  # 20: the x at 32, "$.a" at 37
)


def test_check_config_locates_every_malformed_args_ignore(tmp_path: Path) -> None:
    status, said = check(tmp_path, BAD)
    assert status == 2
    path = tmp_path / "policy.toml"
    lines = [line for line in said.splitlines() if line.startswith(str(path))]
    where = [line[len(str(path)) + 1 :].split(": ", 1) for line in lines]
    assert where == [
        ["3:26", 'args_ignore[1] "$..a" recursive descent ("..") is not supported (character 2)'],
        ["4:3", "args_ignore[2] must be a string (a JSON path), not 7"],
        [
            "4:6",
            'args_ignore[3] "$" names the whole arguments: name a member or an element below "$"',
        ],
        [
            "7:1",
            'args_ignore must be a non-empty array of JSON paths ("$.timestamp"), '
            "not an empty array",
        ],
        [
            "10:1",
            'args_ignore must be a non-empty array of JSON paths ("$.timestamp"), '
            'not the string "$.ts"',
        ],
        ["14:1", "an exempt rule is never denied: drop args_ignore"],
        ["17:1", f"args_ignore names {MAX_ARGS_IGNORE + 1} paths; at most 32 are allowed"],
        [
            "20:32",
            'args_ignore[1] "$.a[x]" expected an index, "*" or a quoted name after "[" '
            "(character 5)",
        ],
        ["20:37", 'args_ignore[2] "$.a" is named twice'],
    ]
    assert "Traceback" not in said


def test_a_rule_with_only_args_ignore_is_complete_and_described(tmp_path: Path) -> None:
    status, said = check(tmp_path, policy_text(["$.ts", "$['x.y']"], match="*"))
    assert status == 0, said
    assert 'args_ignore ["$.ts", "$[\'x.y\']"] (counted on a policy hash)' in said
    done = run_cli("check-config", "--policy", str(tmp_path / "policy.toml"), "--json")
    (rule,) = json.loads(done.stdout)["tools"]
    assert rule["argsIgnore"] == ["$.ts", "$['x.y']"] and rule["maxRepeats"] is None
    plain = tmp_path / "plain.toml"
    plain.write_text('[[tools]]\nmatch = "a"\nmax_repeats = 2\n', encoding="utf-8")
    done = run_cli("check-config", "--policy", str(plain), "--json")
    assert "argsIgnore" not in json.loads(done.stdout)["tools"][0]


@pytest.mark.parametrize(
    "command",
    [
        ("filter",),
        ("replay", "--verdicts"),
        ("hook", "--agent", "claude-code"),
        ("mcp-proxy", "--", "true"),
        ("mcp-gateway", "--upstream", "http://127.0.0.1:9/mcp"),
    ],
)
def test_every_command_loading_a_policy_refuses_a_bad_args_ignore(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(policy_text(["$.ok", "$[-1]"]), encoding="utf-8")
    events = tmp_path / "e.jsonl"
    events.write_text('{"tool":"probe","args":{},"sessionId":"s"}\n', encoding="utf-8")
    args = [*command[:1], "--policy", str(path), *command[1:]]
    if command[0] in ("filter", "replay"):
        args.append(str(events))
    hook_input = (
        b'{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"probe","tool_input":{}}'
    )
    done = run_cli(*args, input=hook_input if command[0] == "hook" else b"", timeout=120)
    said = done.stdout.decode() + done.stderr.decode()
    assert f"{path}:3:27:" in said  # the "-" of "$[-1]", said
    assert "negative indices are not supported" in said
    assert "Traceback" not in said
    if command[0] != "hook":  # the hook fails open and says why (its own contract)
        assert done.returncode == 2, said


# ---------------------------------------------------------------- library and the contract

POLICY = """\
[[tools]]
match = "http_get"
max_repeats = 3
args_ignore = ["$.ts", "$.headers.x-request-id", "$.token"]

[[tools]]
match = "search"
max_repeats = 3
"""


def test_library_counts_policy_hashes_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    brake = LoopBrake(policy=str(path))
    verdicts = [
        brake.check(
            "http_get",
            {"url": "u", "ts": n, "token": CANARY, "headers": {"x-request-id": f"{CANARY}{n}"}},
            session_id="s",
        )
        for n in range(3)
    ]
    assert [v.count for v in verdicts] == [1, 2, 3]
    assert verdicts[-1].denied and verdicts[-1].policy_hash
    expected = call_hash("http_get", {"url": "u", "headers": {}})[:12]
    assert {v.hash_prefix for v in verdicts} == {expected}
    message = verdicts[-1].message
    assert "policy hash " + expected in message and "args_ignore" in message
    assert CANARY not in message + repr(verdicts)
    # a tool without args_ignore: the contract's hash, no mark, the seed's text
    plain = [brake.check("search", {"q": "x"}, session_id="s") for _ in range(3)]
    assert plain[-1].hash_prefix == call_hash("search", {"q": "x"})[:12]
    assert not any(v.policy_hash for v in plain)
    assert "with identical arguments (call " in plain[-1].message


def test_policy_hash_survives_a_duplicate_and_the_stores(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    store = tmp_path / "state.db"
    first = LoopBrake(policy=str(path), store=str(store))
    second = LoopBrake(policy=str(path), store=str(store))  # another process's view
    a = first.check("http_get", {"url": "u", "ts": 1}, session_id="s", call_id="c1")
    b = second.check("http_get", {"url": "u", "ts": 2}, session_id="s", call_id="c2")
    again = second.check("http_get", {"url": "u", "ts": 2}, session_id="s", call_id="c2")
    assert (a.count, b.count, again.count, again.duplicate) == (1, 2, 2, True)
    assert a.policy_hash and b.policy_hash and again.policy_hash
    assert CANARY.encode() not in store.read_bytes()


def test_every_text_naming_the_call_says_policy_hash() -> None:
    """Warning, progress, cycle and stop texts of a tool with args_ignore: the prefix is
    called a policy hash; the same texts of another tool are unchanged."""
    text = (
        "warn_at = 2\n[cycles]\nmax_period = 2\n[stop]\nafter_denials = 2\n"
        '[[tools]]\nmatch = "t"\nprogress = true\nargs_ignore = ["$.n"]\n'
    )
    policy, _ = parse_policy(text, "p.toml")
    brake = LoopBrake(3, policy=policy)
    warned = [brake.check("t", {"n": n}, session_id="w") for n in range(2)][-1]
    assert warned.warned and f"(policy hash {warned.hash_prefix}\u2026" in warned.warning
    progress = [brake.check("t", {"n": n}, session_id="p") for n in range(3)][-1]
    assert progress.denied and progress.progress
    assert f"(policy hash {progress.hash_prefix}\u2026" in progress.message
    stop = brake.check("t", {"n": 9}, session_id="p")
    assert stop.stop and f"(policy hash {stop.hash_prefix}\u2026" in stop.message
    calls = [("u", {}), ("t", {"n": 0}), ("u", {}), ("t", {"n": 1}), ("u", {}), ("t", {"n": 2})]
    cycle = [brake.check(tool, args, session_id="c") for tool, args in calls][-1]
    assert cycle.rule == "cycle" and "policy hashes for tools with args_ignore" in cycle.message
    plain = [brake.check("u", {"n": 1}, session_id="x") for _ in range(2)][-1]
    assert plain.warned and "(call " in plain.warning and "policy hash" not in plain.warning
