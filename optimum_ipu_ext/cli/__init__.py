"""`ipu-config`: review, check, compare, create and share IPU configurations from a terminal or a CI job.

Exit codes: 0 success, 1 invalid configuration or failed operation, 2 usage error. An error is one line on
stderr (`--debug` adds its traceback). Colour and progress indicators appear only on terminals.
"""

import argparse
import json
import os
import sys
import traceback
from typing import List, Optional, Sequence

from .. import __version__
from ..configuration import IPUConfig
from .output import PROG, Stream, one_line, recorded_warnings
from .reports import problems, render_diff, render_summary, summary
from .sources import CONFIG_NAME, CommandError, apply_updates, is_local, load, presets, push, write_config

__all__ = ["main"]


def command_show(args, out: Stream, err: Stream) -> int:
    config = load(args.source, args.revision, args.set or ())
    data = summary(config, args.source, args.inference)
    if args.json:
        out.write(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render_summary(data, str(config.options_plan(for_inference=args.inference)), out)
    return 0


def expand(sources: Sequence[str]) -> List[str]:
    """Each source, except that a directory without `ipu_config.json` stands for the JSON files it holds."""
    expanded = []
    for source in sources:
        if os.path.isdir(source) and not os.path.isfile(os.path.join(source, CONFIG_NAME)):
            found = sorted(os.path.join(source, name) for name in os.listdir(source) if name.endswith(".json"))
            expanded += found or [source]
        else:
            expanded.append(source)
    return expanded


def command_validate(args, out: Stream, err: Stream) -> int:
    sources = expand(args.sources)
    invalid = 0
    for source in sources:
        with recorded_warnings() as messages:
            found = problems(source, args.revision)
        for message in messages:
            err.write(f"{PROG}: warning: {source}: {message}")
        for line in found:
            out.write(out.style(line, "red"))
        invalid += bool(found)
    if invalid:
        err.write(f"{invalid} of {len(sources)} IPU config(s) invalid")
        return 1
    err.write(err.style(f"{len(sources)} IPU config(s) valid", "green"))
    return 0


def command_diff(args, out: Stream, err: Stream) -> int:
    render_diff(args.a, args.b, load(args.a, args.revision_a), load(args.b, args.revision_b), out)
    return 0


def command_new(args, out: Stream, err: Stream) -> int:
    available = presets()
    if args.list:
        for name in available:
            out.write(name)
        return 0
    if args.preset is None or args.out_dir is None:
        args.parser.error("PRESET and OUT_DIR are required, unless --list is given")
    name = args.preset[: -len(".json")] if args.preset.endswith(".json") else args.preset
    if name not in available:
        args.parser.error(f"argument PRESET: unknown preset {args.preset!r}; the presets are {', '.join(available)}")
    config = IPUConfig.from_dict(json.loads(available[name]))
    apply_updates(config, args.set or ())
    out.write(f"Wrote {write_config(config, args.out_dir, args.force)} from the preset {name}")
    return 0


def command_push(args, out: Stream, err: Stream) -> int:
    config = load(args.source)
    url = push(config, args.repo_id, args.private, args.revision, args.create_pr, args.commit_message)
    branch = f" (branch {args.revision})" if args.revision else ""
    out.write(f"Pushed {args.source} to {args.repo_id}{branch}: {url}")
    return 0


def command_pull(args, out: Stream, err: Stream) -> int:
    if is_local(args.repo_id):
        raise CommandError(f"{args.repo_id}: a local path; pull takes a Hub repository id")
    target = write_config(load(args.repo_id, args.revision), args.out_dir, args.force)
    out.write(f"Pulled {args.repo_id}" + (f" at {args.revision}" if args.revision else "") + f" to {target}")
    return 0


def assignment(text: str) -> str:
    """The argparse type of `--set`: `KEY=VALUE` (values are read and checked by the class later)."""
    key, equals, _ = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


SOURCE_HELP = "a JSON file, a directory holding ipu_config.json, or a Hub repository id"
SET_HELP = ("set a setting, written as in IPUConfig.update_from_string: true, 4, 0.1, [0.1 0.2], null, name; "
            "repeat it, or separate assignments with commas")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show, check, compare, create and share IPU configurations (ipu_config.json).",
        epilog="Exit codes: 0 success, 1 invalid configuration or failed operation, 2 usage error. "
        "Run `ipu-config COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s (optimum-ipu-ext) {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    def command(name: str, run, description: str, **kwargs) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=description, description=description, parents=[common], **kwargs)
        sub.set_defaults(run=run, parser=sub)
        return sub

    show = command("show", command_show, "Summarise a configuration and print the option calls to_options() makes.")
    show.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    show.add_argument("--revision", help="branch, tag or commit, for a Hub repository")
    show.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=SET_HELP)
    show.add_argument("--inference", action="store_true", help="show the inference build rather than training's")
    show.add_argument("--json", action="store_true", help="print the same as JSON")

    validate = command("validate", command_validate, "Check configurations: one line per problem, exit 1 if any.",
                       epilog="A directory without ipu_config.json stands for the *.json files it holds.")
    validate.add_argument("sources", nargs="+", metavar="SOURCE", help=SOURCE_HELP)
    validate.add_argument("--revision", help="branch, tag or commit, for Hub repositories")

    diff = command("diff", command_diff, "Compare two configurations: the settings, then the option calls that differ.")
    diff.add_argument("a", metavar="A", help=SOURCE_HELP)
    diff.add_argument("b", metavar="B", help=SOURCE_HELP)
    diff.add_argument("--revision-a", metavar="REVISION", help="revision of A, for a Hub repository")
    diff.add_argument("--revision-b", metavar="REVISION", help="revision of B, for a Hub repository")

    new = command("new", command_new, "Write an ipu_config.json from a preset.")
    new.add_argument("preset", nargs="?", metavar="PRESET", help="a preset name (see --list)")
    new.add_argument("out_dir", nargs="?", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    new.add_argument("--list", action="store_true", help="list the presets")
    new.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=SET_HELP)
    new.add_argument("--force", action="store_true", help="overwrite an existing ipu_config.json")

    token_note = "The Hub token is the one `hf auth login` stores, or HF_TOKEN."
    push_ = command("push", command_push, "Upload a configuration to a Hub repository, created if needed.",
                    epilog=token_note)
    push_.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    push_.add_argument("repo_id", metavar="REPO_ID", help="the repository, e.g. my-org/bert-base-ipu")
    push_.add_argument("--private", action="store_true", help="create the repository private")
    push_.add_argument("--revision", metavar="BRANCH", help="push to this branch, created if needed")
    push_.add_argument("--create-pr", action="store_true", help="open a pull request rather than commit")
    push_.add_argument("--commit-message", metavar="MESSAGE", help="the commit message")

    pull = command("pull", command_pull, "Download the configuration of a Hub repository into a directory.",
                   epilog=token_note)
    pull.add_argument("repo_id", metavar="REPO_ID", help="the repository")
    pull.add_argument("out_dir", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    pull.add_argument("--revision", help="branch, tag or commit")
    pull.add_argument("--force", action="store_true", help="overwrite an existing ipu_config.json")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `ipu-config` console script. Returns the exit code (argparse exits with 2 on usage errors)."""
    args = build_parser().parse_args(argv)
    out, err = Stream(sys.stdout), Stream(sys.stderr)
    messages: List[str] = []
    failure = None
    try:
        with recorded_warnings() as messages:
            return args.run(args, out, err)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        failure = error
        return 1
    finally:
        for message in messages:
            err.write(f"{PROG}: warning: {message}")
        if failure is not None:
            if args.debug:
                traceback.print_exception(type(failure), failure, failure.__traceback__)
            err.write(f"{PROG}: {err.style('error', 'red')}: {one_line(failure)}")
