"""``poptorch._options_config`` (Poplar SDK 3.4): what ``Options.loadFromFile`` does with a file.

Each line is stripped; blank lines and lines that start with ``#`` are dropped; every other line gets the prefix
``options.``. The lines are then run together, as one piece of Python, with ``poptorch`` and the options as the
only names in scope (a comment after a call is Python's own). A piece that does not compile raises
``ConfigFileError``, saying where: the number of the line is counted among the lines run, and the file is named by
its base name. Any other error (an unknown method, a wrong call) comes out as raised.
"""
import os


def parseAndSetOptions(options, filepath):
    import poptorch  # the poptorch in use: these doubles, when installed

    with open(filepath) as config_file:  # the locale's encoding, as poptorch opens it
        kept = [raw.strip() for raw in config_file]
    source = "\n".join("options." + line for line in kept if line and not line.startswith("#"))
    try:
        program = compile(source, "<string>", "exec")
    except SyntaxError as error:
        raise poptorch.ConfigFileError(
            f"{type(error).__name__} at line {error.lineno} of {os.path.basename(filepath)}: {error.args[0]}\n"
            f"> {error.text}"
        ) from error
    exec(program, {}, {"poptorch": poptorch, "options": options})
