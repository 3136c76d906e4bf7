"""Running `ipu-config` in the test process, or in a fresh one, for the CLI tests."""

import subprocess
import sys

from optimum_ipu_ext.cli import main


def run(capsys, *argv):
    """`main(argv)` in this process: (exit code, stdout, stderr). argparse's exits are returned, not raised."""
    try:
        code = main([str(arg) for arg in argv])
    except SystemExit as exit:
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_alone(*argv):
    """`main(argv)` in a fresh Python: (exit code, which of torch, transformers and poptorch it imported)."""
    code = (
        "import sys\n"
        "from optimum_ipu_ext.cli import main\n"
        f"code = main({[str(arg) for arg in argv]!r})\n"
        "print(code, sorted(name for name in ('torch', 'transformers', 'poptorch') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return result.stdout.splitlines()[-1]
