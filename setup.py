"""The optional C reader of event lines (``loop_brake_cli/readers/_event_scan.c``).

Everything else is in pyproject.toml. The extension is optional: without a C
compiler the install goes on and ``filter`` reads every line with orjson
(``fastpath.py``), giving the same verdicts more slowly. Two things follow:

* whether it can be built is decided before ``setup()`` by compiling the source
  once, so a failed build leaves a pure ``py3-none-any`` wheel rather than a
  platform-tagged wheel with nothing native inside;
* pip hides a build's output unless ``-v`` is given, so the one line that says the
  reader was not built also goes to the terminal (``/dev/tty``) when there is one.

Where it builds, it builds against the stable ABI of Python 3.10 (abi3), so one
wheel per platform serves every supported Python.
"""

import glob
import os
import sys
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = "loop_brake_cli/readers/_event_scan.c"
BUILDING = any(c in sys.argv for c in ("bdist_wheel", "build_ext", "editable_wheel", "develop"))
LIMITED_API = "0x030A0000"  # Python 3.10, the oldest supported (pyproject requires-python)
NOT_BUILT = (
    "loop-brake-cli: the optional C reader was not built ({why}); filter gives the same "
    "verdicts about 1.5x slower. To build it, install a C compiler and the Python headers "
    "(Debian: apt-get install gcc python3-dev), then: pip install --force-reinstall "
    "--no-binary loop-brake-cli loop-brake-cli (from a checkout: pip install --force-reinstall .)"
)


def _say(line: str) -> None:
    """To the build log (pip -v) and, since pip hides that, to the terminal if any."""
    print(line, file=sys.stderr)
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(line + "\n")
    except OSError:
        pass


def _why_not_buildable() -> str | None:
    """None when the C reader compiles here, else a short reason."""
    if os.environ.get("LOOP_BRAKE_NO_C_READER"):
        return "LOOP_BRAKE_NO_C_READER is set"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "the free-threaded build has no stable ABI to build against"
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    try:
        customize_compiler(compiler)
        with tempfile.TemporaryDirectory() as scratch:
            compiler.compile(
                [SOURCE],
                output_dir=scratch,
                include_dirs=[sysconfig.get_paths()["include"]],
                macros=[("Py_LIMITED_API", LIMITED_API)],
            )
    except Exception:  # no compiler, no headers, a compile error: all mean "not built"
        command = getattr(compiler, "compiler_so", None) or ["cc"]
        return f"no working C compiler: {os.path.basename(command[0])} could not compile it"
    return None


class OptionalBuildExt(build_ext):
    """A build that fails after the probe passed still leaves a working install."""

    def run(self) -> None:
        if self.inplace:  # a version-tagged build left from before abi3 would be imported first
            for stale in glob.glob("loop_brake_cli/readers/_event_scan.cpython-*"):
                os.remove(stale)
        try:
            super().run()
        except Exception as exc:
            _say(NOT_BUILT.format(why=f"the build failed: {exc}"))


def main() -> None:
    why = _why_not_buildable()
    if why is not None:
        if BUILDING:  # pip also runs this file for metadata alone: say it once, at the build
            _say(NOT_BUILT.format(why=why))
        setup()
        return
    setup(
        ext_modules=[
            Extension(
                "loop_brake_cli.readers._event_scan",
                [SOURCE],
                depends=[
                    "loop_brake_cli/readers/_sha256.h",
                    "loop_brake_cli/readers/_session_slots.h",
                    "loop_brake_cli/readers/_claude_scan.h",
                    "loop_brake_cli/readers/_policy_slots.h",
                ],
                define_macros=[("Py_LIMITED_API", LIMITED_API)],
                py_limited_api=True,
                optional=True,
            )
        ],
        cmdclass={"build_ext": OptionalBuildExt},
        options={"bdist_wheel": {"py_limited_api": "cp310"}},
    )


main()
