"""Running `ipu-config` in the test process, for the CLI tests."""

from optimum_ipu_ext.cli import main


def run(capsys, *argv):
    """`main(argv)` in this process: (exit code, stdout, stderr). argparse's exits are returned, not raised."""
    try:
        code = main([str(arg) for arg in argv])
    except SystemExit as exit:
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
