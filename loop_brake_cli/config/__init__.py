"""The maxRepeats a DeepSeek Harness composition will really use, read from its patch layers.

A harness composes patch layers in order (each bundle's ``cordis.patch.yml``, the
profile's, the home-level file, then ``--patch`` overlays). A patch file is a
top-level YAML list of entries:

- ``- insert: [rows]`` appends plugin rows (``id``, ``name``, optional ``config``);
  with an ``id`` naming a group row, the rows go inside that group;
- ``- id: loop-brake`` (no ``insert``) targets an existing row; each field it
  supplies replaces the row's field, and ``config`` is replaced *whole*, never
  merged, so an override that forgets ``maxRepeats`` drops it.

The plugin's row is ``id: loop-brake``, ``name: dsh-loop-brake``, and its one config
key is ``maxRepeats``. All layers are applied in one pass, as the harness does.

Where each part is decided:

- ``load``: reading one file safely (YAML nodes, never objects; the 1.2 core schema);
- ``compose``: applying the layers and finding the plugin's row;
- ``validate``: errors in the row's config and the warnings about it;
- ``resolve``: which maxRepeats wins (row, environment, default);
- ``problems``: ``file:line:column`` locations, ConfigError and ConfigWarning.

Imports neither click nor rich, and yaml only when a file is read.
"""

from __future__ import annotations

from .compose import ROW_ID, Touch
from .problems import ConfigError, ConfigWarning, Location, PluginNotFoundError
from .resolve import ConfigReport, check_config, max_repeats_for_cli

DEFAULT_PATCH_FILE = "cordis.patch.yml"
"""The patch file check-config reads when none is named (the harness's own name for it)."""

__all__ = [
    "ConfigError",
    "ConfigReport",
    "ConfigWarning",
    "DEFAULT_PATCH_FILE",
    "Location",
    "PluginNotFoundError",
    "ROW_ID",
    "Touch",
    "check_config",
    "max_repeats_for_cli",
]
