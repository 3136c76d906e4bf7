"""`ipu-config`'s layout: one module per command, each registering its parser and its `run`; the options several
commands share, each declared by one helper of `cli.arguments`; a parser that builds without importing the rest of
the package."""

import argparse
import importlib
import pkgutil
import subprocess
import sys

import pytest

from optimum_ipu_ext.cli import build_parser, commands, main
from optimum_ipu_ext.cli.arguments import CALIBRATION_HELP, IPU_HELP, RESERVE_HELP, assignment, share
from optimum_ipu_ext.cli.output import Stream

# as `ipu-config --help` lists them, with the module of each
COMMANDS = {
    "show": "show",
    "place": "place",
    "plan": "plan",
    "calibrate": "calibrate",
    "validate": "validate",
    "diff": "diff",
    "new": "new",
    "import": "import_",
    "export": "export",
    "schema": "schema",
    "push": "push",
    "pull": "pull",
    "upgrade": "upgrade",
}

SET_HELP = ("set a setting, written as in IPUConfig.update_from_string: true, 4, 0.1, [0.1 0.2], null, name; "
            "repeat it, or separate assignments with commas")
POD_TYPE_HELP = ("for a file of optimum-graphcore 0.2.1-0.6.0: take the values given for this pod type (pod4, pod8, "
                 "pod16, pod32, pod64, pod128, pod256) where a setting has one per pod type (default: their "
                 "\"default\")")
SOURCE_HELP = "a JSON file, a directory holding ipu_config.json, or a Hub repository id"

# each shared option: what every command that has it declares alike (action, type, metavar, default), then each
# command's help text
SHARED_OPTIONS = {
    "--set": (
        ("append", assignment, "KEY=VALUE", None),
        {
            "show": SET_HELP,
            "place": SET_HELP,
            "validate": SET_HELP + "; applied to every source before it is checked",
            "new": SET_HELP,
            "import": "a setting the options cannot tell (layers_per_ipu, ...), written as for `show --set`",
            "export": SET_HELP,
        },
    ),
    "--force": (
        ("store_true", None, None, False),
        {
            "place": "with --write: overwrite an existing ipu_config.json; with --svg or --html: overwrite a file "
                     "that is not a picture or page place wrote (one it wrote is replaced anyway)",
            "plan": "with --write: overwrite an existing ipu_config.json; with --svg or --html: overwrite a file "
                    "that is not a picture or page plan wrote (one it wrote is replaced anyway)",
            "new": "overwrite an existing ipu_config.json",
            "import": "overwrite an existing ipu_config.json",
            "export": "overwrite an existing FILE",
            "pull": "overwrite an existing ipu_config.json",
            "calibrate": "with --output: overwrite a file that is not a calibration calibrate wrote (one it wrote is "
                         "replaced anyway)",
        },
    ),
    "--json": (
        ("store_true", None, None, False),
        {"show": "print the same as JSON", "place": "print the placement as JSON",
         "plan": "print the plan as JSON: every candidate with its config and its placement",
         "calibrate": "print the calibration as JSON, as --output writes it"},
    ),
    "--pod-type": (
        ("store", None, "POD", None),
        {
            "show": POD_TYPE_HELP,
            "place": POD_TYPE_HELP,
            "validate": POD_TYPE_HELP,
            "diff": POD_TYPE_HELP + "; for both",
            "export": POD_TYPE_HELP,
            "pull": POD_TYPE_HELP,
            "upgrade": POD_TYPE_HELP,
        },
    ),
    "--ipu": (
        ("store", None, None, "gc200"),
        {"place": "with the activations: " + IPU_HELP, "plan": IPU_HELP},
    ),
    "--calibration": (
        ("store", None, "FILE", None),
        {"place": CALIBRATION_HELP, "plan": CALIBRATION_HELP},
    ),
    "--reserve": (
        ("store", share, "SHARE", None),
        {"place": RESERVE_HELP, "plan": RESERVE_HELP},
    ),
    "--debug": (
        ("store_true", None, None, argparse.SUPPRESS),
        {command: "show the traceback of an error" for command in COMMANDS},
    ),
}

# options of the same name that say another thing: `calibrate --ipu` is the IPUs the runs ran on, not those a step is
# timed on, and has no default (a run's own ipu_run.json may say it)
OWN_OPTIONS = {("calibrate", "--ipu"): (("store", None, None, None), "the IPUs the runs ran on (default: what "
                                                                      "ipu_run.json says, else gc200)")}


def test_an_option_of_a_shared_name_that_says_another_thing_is_declared_as_its_command_needs():
    for (name, flag), (declared, text) in OWN_OPTIONS.items():
        action = option(command_parsers()[name], flag)
        assert ((ACTION_NAMES[type(action)], action.type, action.metavar, action.default), action.help,
                action.choices) == (declared, text, ("gc200", "bow"))


# `--revision`: push names a branch to push to, the others a revision to read
REVISIONS = {
    "show": (None, "branch, tag or commit, for a Hub repository"),
    "place": (None, "branch, tag or commit of CONFIG, for a Hub repository"),
    "plan": (None, "branch, tag or commit of MODEL, on the Hub"),
    "validate": (None, "branch, tag or commit, for Hub repositories"),
    "export": (None, "branch, tag or commit, for a Hub repository"),
    "push": ("BRANCH", "push to this branch, created if needed"),
    "pull": (None, "branch, tag or commit"),
}

# the configurations each command reads: (dest, metavar, nargs)
SOURCES = {
    "show": [("source", "SOURCE", None)],
    "place": [("source", "CONFIG", "?")],
    "validate": [("sources", "SOURCE", "+")],
    "diff": [("a", "A", None), ("b", "B", None)],
    "export": [("source", "SOURCE", None)],
}

ACTION_NAMES = {
    argparse._AppendAction: "append",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreAction: "store",
}


def subparsers_of(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    (subparsers,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return subparsers


def command_parsers() -> dict:
    """The parser of each command, by name."""
    return subparsers_of(build_parser()).choices


def option(parser: argparse.ArgumentParser, flag: str):
    """The action of `flag` in `parser`, or None."""
    return next((action for action in parser._actions if flag in action.option_strings), None)


def test_the_commands_are_listed_in_order_each_with_its_description():
    parsers = command_parsers()
    assert list(parsers) == list(COMMANDS)
    listed = {action.dest: action.help for action in subparsers_of(build_parser())._choices_actions}
    assert listed == {name: parser.description for name, parser in parsers.items()}
    assert all(parser.description for parser in parsers.values())


def test_the_hub_commands_say_where_the_token_comes_from():
    parsers = command_parsers()
    note = "The Hub token is the one `hf auth login` stores, or HF_TOKEN."
    assert parsers["pull"].epilog == note
    assert parsers["push"].epilog == note + " Prints the URL of the commit or pull request, or that nothing changed."


def test_each_command_runs_its_own_module():
    for name, parser in command_parsers().items():
        module = importlib.import_module(f"optimum_ipu_ext.cli.commands.{COMMANDS[name]}")
        assert parser.get_default("func") is module.run, name
        assert parser.get_default("parser") is parser and parser.prog == f"ipu-config {name}"


def test_every_command_module_is_registered():
    modules = {info.name for info in pkgutil.iter_modules(commands.__path__)}
    assert sorted(modules) == sorted(COMMANDS.values())
    assert [module.__name__.rpartition(".")[2] for module in commands.COMMANDS] == list(COMMANDS.values())


@pytest.mark.parametrize("flag", sorted(SHARED_OPTIONS))
def test_a_shared_option_is_declared_alike_in_every_command(flag):
    declared, helps = SHARED_OPTIONS[flag]
    found = {}
    for name, parser in command_parsers().items():
        if (name, flag) in OWN_OPTIONS:
            continue
        action = option(parser, flag)
        if action is not None:
            kind = ACTION_NAMES[type(action)]
            found[name] = ((kind, action.type, action.metavar, action.default), action.option_strings, action.help)
    assert found == {name: (declared, [flag], text) for name, text in helps.items()}


def test_revision_is_declared_alike_in_every_command():
    found = {}
    for name, parser in command_parsers().items():
        action = option(parser, "--revision")
        if action is not None:
            assert (type(action), action.type, action.default, action.option_strings) == (
                argparse._StoreAction, None, None, ["--revision"])
            found[name] = (action.metavar, action.help)
    assert found == REVISIONS


def test_the_configurations_read_are_declared_alike():
    found = {}
    for name, parser in command_parsers().items():
        positionals = [action for action in parser._actions if action.help == SOURCE_HELP]
        if positionals:
            found[name] = [(action.dest, action.metavar, action.nargs) for action in positionals]
            assert all(not action.option_strings for action in positionals)
    assert found == SOURCES


@pytest.mark.parametrize(
    "argv, debug",
    [(["schema"], False), (["--debug", "schema"], True), (["schema", "--debug"], True)],
    ids=["none", "before-the-command", "after-it"],
)
def test_debug_is_taken_before_or_after_the_command(argv, debug):
    assert build_parser().parse_args(argv).debug is debug


def test_main_returns_what_the_command_returns(capsys, monkeypatch):
    from optimum_ipu_ext.cli.commands import diff

    calls = []

    def run(args, out, err):
        calls.append((args.a, args.b, args.exit_code, type(out), out.stream, type(err), err.stream))
        return 7

    monkeypatch.setattr(diff, "run", run)
    assert main(["diff", "one", "two", "--exit-code"]) == 7
    assert calls == [("one", "two", True, Stream, sys.stdout, Stream, sys.stderr)]
    assert capsys.readouterr() == ("", "")


def test_main_refuses_an_unknown_command_as_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["publish", "x"])
    assert exited.value.code == 2
    _, err = capsys.readouterr()
    choices = ", ".join(f"'{name}'" for name in COMMANDS)
    assert err.endswith(f"ipu-config: error: argument COMMAND: invalid choice: 'publish' (choose from {choices})\n")


# the parts of the package a command's `run` imports, which the parser must not (nor the libraries they import)
HEAVY = ("optimum_ipu_ext.config", "optimum_ipu_ext.settings", "optimum_ipu_ext.options", "optimum_ipu_ext.hub",
         "optimum_ipu_ext.placement", "optimum_ipu_ext.recorder", "optimum_ipu_ext.cli.sources",
         "optimum_ipu_ext.cli.reports", "transformers", "torch", "optimum", "huggingface_hub")


def test_help_and_usage_errors_import_none_of_what_the_commands_run():
    code = (
        "import contextlib, io, sys\n"
        "from optimum_ipu_ext.cli import main\n"
        f"heavy = {HEAVY!r}\n"
        "def loaded():\n"
        "    return sorted(name for name in sys.modules if any((name + '.').startswith(h + '.') for h in heavy))\n"
        f"for argv in [['--help'], ['show'], *([name, '--help'] for name in {list(COMMANDS)!r}), ['schema']]:\n"
        "    print(loaded())\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit:\n"
        "            pass\n"
        "print('optimum_ipu_ext.settings.documents' in loaded())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # nothing before `schema` runs, which imports the schema's writer: the check sees an import when there is one
    assert result.stdout.splitlines() == ["[]"] * (len(COMMANDS) + 3) + ["True"]
