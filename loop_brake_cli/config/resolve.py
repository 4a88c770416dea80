"""Which maxRepeats wins: the composed row's, else the environment's, else the default.

``check_config`` is the whole answer for check-config (value, source, the layers
that touched the row, warnings); ``max_repeats_for_cli`` is the short one for
``filter``/``replay``, where an explicit ``--max-repeats`` wins before any file
is read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.limits import (
    DEFAULT_MAX_REPEATS,
    ENV_VAR,
    InvalidMaxRepeatsError,
    normalize_max_repeats,
    parse_env_max_repeats,
)
from ..core.verdicts import PLUGIN
from .compose import Touch, compose, find_row
from .problems import ConfigError, ConfigWarning, Location
from .validate import row_config, row_warnings


@dataclass
class ConfigReport:
    """The effective maxRepeats, where it came from, and what to warn about."""

    value: int
    kind: str  # "config", "env" or "default"
    source: str  # short: "profile/cordis.patch.yml:12, row loop-brake" / "$VAR" / "default"
    detail: str  # the human sentence for the default and env cases
    location: Location | None
    row: str
    layers: list[Touch] = field(default_factory=list)
    warnings: list[ConfigWarning] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _env_value(use_env: bool, env: Mapping[str, str] | None) -> tuple[int | None, str]:
    """The environment fallback, and a phrase saying why it was or was not used."""
    if not use_env:
        return None, f"{ENV_VAR} ignored (--no-env)"
    raw = (os.environ if env is None else env).get(ENV_VAR)
    if raw is None:
        return None, f"{ENV_VAR} unset"
    value = parse_env_max_repeats(raw)  # InvalidMaxRepeatsError propagates
    if value is None:
        return None, f"{ENV_VAR} empty"
    return value, f"${ENV_VAR}"


def _without_row_value(row_name: str, use_env: bool, env: Mapping[str, str] | None) -> ConfigReport:
    """The environment's or the default maxRepeats, for a row that sets none."""
    try:
        env_value, why = _env_value(use_env, env)
    except InvalidMaxRepeatsError as exc:
        raise InvalidMaxRepeatsError(
            exc.source,
            exc.value,
            str(exc).rsplit("(", 1)[-1].rstrip(")")
            + f"; read because the composed row {row_name!r} sets no maxRepeats",
        ) from None
    if env_value is not None:
        detail = f"${ENV_VAR}: no maxRepeats in the composed row"
        return ConfigReport(env_value, "env", why, detail, None, row_name)
    detail = f"default: no maxRepeats in the composed row, {why}"
    return ConfigReport(DEFAULT_MAX_REPEATS, "default", "default", detail, None, row_name)


def check_config(
    paths: Sequence[str], use_env: bool = True, env: Mapping[str, str] | None = None
) -> ConfigReport:
    """Compose ``paths`` (in order, later wins) and report the effective maxRepeats.

    Raises ConfigError (exit 2), PluginNotFoundError (exit 4), or
    InvalidMaxRepeatsError for an unusable environment value, which counts only
    when the composed row sets no maxRepeats.
    """
    composer = compose(paths)
    row = find_row(composer, paths)
    row_name = row.id or PLUGIN
    value, key_loc, problems = row_config(row, row_name)
    if problems:
        raise ConfigError(problems)
    fallback: str | None = None
    if value is not None and key_loc is not None:
        source = f"{key_loc.file}:{key_loc.line}, row {row_name}"
        report = ConfigReport(value, "config", source, source, key_loc, row_name)
    else:
        report = _without_row_value(row_name, use_env, env)
        fallback = (
            f"${ENV_VAR} ({report.value})"
            if report.kind == "env"
            else f"the default {report.value}"
        )
    report.layers = list(row.touches)
    report.warnings = composer.warnings + row_warnings(
        row, row_name, report.value, report.location, fallback
    )
    report.files = list(paths)
    return report


def max_repeats_for_cli(
    explicit: int | None, config_paths: Sequence[str], use_env: bool = True
) -> tuple[int, str]:
    """The maxRepeats for ``filter``/``replay`` and a short name of its source.

    Precedence: the explicit flag (the config is then not read), the composed
    config, the environment, then 3. Raises ConfigError (a located message;
    PluginNotFoundError when no row exists) or InvalidMaxRepeatsError.
    """
    if explicit is not None:
        return normalize_max_repeats(explicit, "--max-repeats"), "--max-repeats"
    if not config_paths:
        env_value, why = _env_value(use_env, None)
        if env_value is not None:
            return env_value, why
        return DEFAULT_MAX_REPEATS, "default"
    report = check_config(config_paths, use_env=use_env)
    return report.value, report.source
