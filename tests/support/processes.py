"""Running a few lines of Python in a fresh process, for what only a new interpreter shows (its locale)."""

import os
import subprocess
import sys
from pathlib import Path

import optimum_ipu_ext

# the package the tests import (a mutation run's copy, where it runs one), for the fresh process to import too
PACKAGE_ROOT = str(Path(optimum_ipu_ext.__file__).resolve().parents[1])


def run_in_c_locale(code: str) -> str:
    """The output of `code` run in the C locale with Python's UTF-8 mode and its coercion of the C locale off: there a
    file opened without an encoding reads ASCII, as on a host whose locale is not UTF-8."""
    environment = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0",
                       PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")]))
    check = "import locale; assert locale.getpreferredencoding(False).lower() != 'utf-8'\n"
    result = subprocess.run([sys.executable, "-c", check + code], capture_output=True, text=True, env=environment,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout
