"""check-config applies exactly the core's maxRepeats rule (``normalize_max_repeats``).

JSON is YAML, so a value written as JSON into a patch file must be accepted by
the composed-config reader exactly when the core accepts the same value, and
yield the same integer.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.config import ConfigError, check_config
from loop_brake_cli.core.limits import InvalidMaxRepeatsError, normalize_max_repeats

VALUES = st.one_of(
    st.integers(min_value=-5, max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 5.0, 2.5, 0.0, -0.0, 1e3]),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.sampled_from(["5", "05", " 5", "five"]),
)


@settings(max_examples=150, deadline=None)
@given(value=VALUES)
def test_config_reader_agrees_with_the_core(tmp_path_factory, value) -> None:
    path: Path = tmp_path_factory.mktemp("rule") / "p.yml"
    path.write_text(
        "- insert:\n    - id: loop-brake\n      config:\n"
        f"        maxRepeats: {json.dumps(value)}\n",
        encoding="utf-8",
    )
    try:
        expected: int | None = normalize_max_repeats(value)
    except InvalidMaxRepeatsError:
        expected = None
    try:
        got: int | None = check_config([str(path)], use_env=False).value
    except ConfigError as exc:
        assert f"{path}:4:" in str(exc)
        got = None
    assert got == expected
