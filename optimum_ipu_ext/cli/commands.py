"""The `ipu-config` commands: each takes the parsed arguments and the two output streams, returns the exit code.

Local files and presets go through the core only; transformers and huggingface_hub are imported by the
commands that reach the Hub, when they do.
"""

import argparse
import contextlib
import json
import os
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from ..config.plain import PlainIPUConfig
from ..errors import BuilderError, PlacementError, UnsupportedOptionsError, as_json
from ..options.option_file_import import import_located, option_file_sources, options_from_lines
from ..placement.architectures import ARCHITECTURES
from ..placement.report import render, render_comparison
from ..recorder import run_builder, sdk_modules
from ..sdk.popdist import PopDistLaunch
from ..settings.documents import json_schema_string
from ..settings.mode import INFERENCE, TRAINING, Mode
from ..settings.schema import parse_update_string
from ..settings.sources import is_local, presets
from ..settings.table import SETTINGS
from .output import PROG, Stream, one_line, progress, recorded_warnings
from .reports import differences_from_defaults, problems, render_diff, render_differences, render_summary, summary
from .sources import (
    CONFIG_NAME,
    CommandError,
    apply_updates,
    get_token,
    load,
    load_local,
    parsed_updates,
    push,
    quiet_client,
    upgrade_file,
    write_config,
)


def command_show(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    config = load(args.source, args.revision, args.set or (), args.pod_type)
    launch = None
    if args.popdist is not None:
        num_instances, instance_index = args.popdist
        replicas = getattr(config, Mode.of(args.inference).setting("replication_factor"))
        launch = PopDistLaunch(num_replicas=replicas, num_instances=num_instances, instance_index=instance_index)
    data = summary(config, args.source, args.inference, popdist=launch)
    if args.json:
        out.write(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render_summary(data, str(config.options_plan(for_inference=args.inference, popdist=launch)), out)
    return 0


def command_place(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    if args.list_architectures:
        for name in ARCHITECTURES:
            out.write(name)
        return 0
    if args.source is None or args.model is None:
        args.parser.error("CONFIG and --model are required, unless --list-architectures is given")
    if args.write is not None and not args.balance:
        args.parser.error("--write saves the balanced split: give --balance too")
    target = os.path.join(args.write, CONFIG_NAME) if args.write is not None else None
    if target is not None and os.path.exists(target) and not args.force:
        raise CommandError(f"{target}: exists; pass --force to overwrite it")
    config = load(args.source, args.revision, args.set or (), args.pod_type)
    setting = Mode.of(args.inference).setting("layers_per_ipu")
    try:
        current = _placement(args, config, err)
    except PlacementError as error:
        if not (args.balance and error.setting == setting):
            raise CommandError(f"{args.source}: {one_line(error)}") from error
        # a split of the wrong size is balanced from an even one over the same IPUs
        ipus = getattr(config, setting.replace("layers_per_ipu", "ipus_per_replica"))
        err.write(f"{PROG}: note: {args.source}: {one_line(error)} Balancing from {as_json([-1] * ipus)}.")
        setattr(config, setting, [-1] * ipus)
        current = None
    try:
        balanced = (current or _placement(args, config, err)).balanced(args.balance) if args.balance else current
    except PlacementError as error:
        raise CommandError(f"{args.source}: {one_line(error)}") from error
    if target is not None:  # before any output: a reader may go away
        setattr(config, setting, list(balanced.layers_per_ipu))
        write_config(config, args.write, args.force)
    if args.json:
        out.write(balanced.to_json_string().rstrip("\n"))
    elif current is None:
        out.write(render(balanced, out.style))
    else:
        out.write(render(current, out.style))
        if args.balance:
            out.write()
            out.write(render_comparison(current, balanced, out.style, args.balance))
    if target is not None:
        err.write(f"Wrote {target} with {setting} {list(balanced.layers_per_ipu)}")
    return 1 if args.check and not balanced.fits else 0


def _placement(args: argparse.Namespace, config, err: Stream):
    """The placement of `--model` on `config`, a Hub model read behind a spinner."""
    hub = not is_local(args.model)
    if hub:
        quiet_client()
    with progress(err, f"Reading {args.model}") if hub else contextlib.nullcontext():
        return config.placement(args.model, architecture=args.architecture, for_inference=args.inference,
                                fp32=args.fp32, revision=args.model_revision, token=get_token() if hub else None,
                                micro_batch_size=args.micro_batch_size, sequence_length=args.sequence_length,
                                decoder_sequence_length=args.decoder_sequence_length)


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


def command_validate(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    sources = expand(args.sources)
    updates = parsed_updates(args.set or ())
    invalid = 0
    for source in sources:
        with recorded_warnings() as messages:
            found = problems(source, args.revision, updates, args.pod_type)
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


def command_diff(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    a, b = load(args.a, args.revision_a, pod_type=args.pod_type), load(args.b, args.revision_b, pod_type=args.pod_type)
    differ = render_diff(args.a, args.b, a, b, out)
    return 1 if differ and args.exit_code else 0


def command_new(args: argparse.Namespace, out: Stream, err: Stream) -> int:
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
    config = PlainIPUConfig.from_dict(json.loads(available[name]))
    apply_updates(config, args.set or (), name)
    out.write(f"Wrote {write_config(config, args.out_dir, args.force)} from the preset {name}")
    return 0


def command_import(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    target = os.path.join(args.out_dir, CONFIG_NAME)
    if os.path.exists(target) and not args.force:  # before the builder runs: it may take a while
        raise CommandError(f"{target}: exists; pass --force to overwrite it")
    sources = dict(_given({TRAINING: args.builder, INFERENCE: args.inference}))
    if (args.arg or args.kwarg) and all(function is None for _, function in sources.values()):
        args.parser.error("--arg and --kwarg are passed to a builder (PATH.py:FUNCTION); an option file takes none")
    overrides = parse_update_string(",".join(args.set), SETTINGS) if args.set else {}
    files = {mode: option_file_sources(mode, path) for mode, (path, function) in sources.items() if function is None}
    names = " and ".join(f"{path}{':' + function if function else ''} ({mode})"
                         for mode, (path, function) in sources.items())
    with sdk_modules() as recorded:
        options, written = {}, {}
        for mode, (path, function) in sources.items():
            if function is None:
                options[mode], written[mode] = options_from_lines(files[mode], mode)
            else:
                options[mode] = _run_builder(path, function, args)
        try:
            with warnings.catch_warnings(record=True) as dropped:
                warnings.simplefilter("always")
                config = import_located(PlainIPUConfig, options, written, overrides)
        except UnsupportedOptionsError as error:
            err.write(f"{PROG}: {err.style('error', 'red')}: no IPU config rebuilds these options of {names}:")
            for option, problem in sorted(error.options.items()):
                where = f"{error.locations[option]}: " if option in error.locations else ""
                err.write(f"  {where}{option}: {problem}")
            return 1
    written_to = write_config(config, args.out_dir, args.force)  # before any output: a reader may go away
    for warning in dropped:
        err.write(f"{PROG}: warning: {warning.message}")
    out.write(f"Imported {names}, run on {'the recorder (no Poplar SDK here)' if recorded else 'poptorch'}")
    out.write()
    render_differences(differences_from_defaults(config), out)
    out.write()
    out.write(f"Wrote {written_to}")
    return 0


def _given(sources: Dict[Mode, Optional[Tuple[str, Optional[str]]]]) -> List[Tuple[Mode, Tuple[str, Optional[str]]]]:
    """The (mode, (path, function)) of the sources given, function `None` for an option file."""
    return [(mode, source) for mode, source in sources.items() if source is not None]


def _run_builder(path: str, function: str, args: argparse.Namespace):
    """The options of the builder, called with `--arg` and `--kwarg`; where it fails after being given a namespace
    whose attributes it never read, the error says to pass its parameters with `--kwarg`."""
    arguments = None if args.arg is None else dict(args.arg)
    try:
        return run_builder(path, function, arguments, dict(args.kwarg or ()))
    except BuilderError as error:
        if not error.parameters:
            raise
        given = [f"--kwarg {name}={_typed(value)}" for name, value in (arguments or {}).items()
                 if name in error.parameters]
        example = f", here {' '.join(given)}" if given else f" (it takes {', '.join(error.parameters)})"
        raise CommandError(
            f"{error.builder} {error.problem}; it was given an argparse.Namespace as its first argument"
            f"{' (--arg)' if arguments else ''} and read none of its attributes: pass its parameters with "
            f"--kwarg NAME=VALUE{example}"
        ) from error


def _typed(value) -> str:
    """A value of `--arg` as typed: JSON, or the text that is not JSON."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value)


def command_export(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    if os.path.exists(args.output) and not args.force:  # before loading: the source may be on the Hub
        raise CommandError(f"{args.output}: exists; pass --force to overwrite it")
    config = load(args.source, args.revision, args.set or (), args.pod_type)
    path = config.to_options_file(args.output, for_inference=args.inference, overwrite=args.force, name=args.source)
    out.write(f"Wrote {path}: the {'inference' if args.inference else 'training'} build of {args.source}, for "
              "poptorch.Options().loadFromFile")
    return 0


def command_schema(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    out.text(json_schema_string())
    return 0


def command_push(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    config = load_local(args.source)
    url = push(config, args.repo_id, args.private, args.revision, args.create_pr, args.commit_message)
    branch = f" (branch {args.revision})" if args.revision else ""
    if url is None:
        pull_request = "; no pull request opened" if args.create_pr else ""
        out.write(f"no change: {args.repo_id}{branch} already holds this config{pull_request}")
    else:
        out.write(f"Pushed {args.source} to {args.repo_id}{branch}: {url}")
    return 0


def command_pull(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    if is_local(args.repo_id):
        raise CommandError(f"{args.repo_id}: a local path; pull takes a Hub repository id")
    target = write_config(load(args.repo_id, args.revision, pod_type=args.pod_type), args.out_dir, args.force)
    out.write(f"Pulled {args.repo_id}" + (f" at {args.revision}" if args.revision else "") + f" to {target}")
    return 0


def command_upgrade(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    failed = 0
    for source in args.files:
        try:
            out.write(upgrade_file(source, args.pod_type, backup=not args.no_backup))
        except (CommandError, OSError, ValueError, TypeError) as error:
            err.write(f"{PROG}: {err.style('error', 'red')}: {one_line(error)}")
            failed += 1
    return 1 if failed else 0
