"""The optional C reader of event lines (``loop_brake_cli/_event_scan.c``).

Everything else is in pyproject.toml. The extension is optional: without a C
compiler the install goes on and ``filter`` reads every line with orjson
(``fastpath.py``), giving the same verdicts more slowly.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "loop_brake_cli._event_scan",
            ["loop_brake_cli/_event_scan.c"],
            optional=True,
        )
    ]
)
