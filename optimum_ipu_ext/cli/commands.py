"""The `ipu-config` commands: each takes the parsed arguments and the two output streams, returns the exit code.

Local files and presets go through the core only; transformers and huggingface_hub are imported by the
commands that reach the Hub, when they do.
"""

import argparse
import json
import os
from typing import List, Sequence

from ..core import PlainIPUConfig
from ..documents import json_schema_string
from ..popdist import PopDistLaunch
from .output import PROG, Stream, recorded_warnings
from .reports import problems, render_diff, render_summary, summary
from .sources import CONFIG_NAME, CommandError, apply_updates, is_local, load, load_local, presets, push, write_config


def command_show(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    config = load(args.source, args.revision, args.set or ())
    launch = None
    if args.popdist is not None:
        num_instances, instance_index = args.popdist
        replicas = config.inference_replication_factor if args.inference else config.replication_factor
        launch = PopDistLaunch(num_replicas=replicas, num_instances=num_instances, instance_index=instance_index)
    data = summary(config, args.source, args.inference, popdist=launch)
    if args.json:
        out.write(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render_summary(data, str(config.options_plan(for_inference=args.inference, popdist=launch)), out)
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


def command_validate(args: argparse.Namespace, out: Stream, err: Stream) -> int:
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


def command_diff(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    differ = render_diff(args.a, args.b, load(args.a, args.revision_a), load(args.b, args.revision_b), out)
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
    apply_updates(config, args.set or ())
    out.write(f"Wrote {write_config(config, args.out_dir, args.force)} from the preset {name}")
    return 0


def command_schema(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    out.stream.write(json_schema_string())
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
    target = write_config(load(args.repo_id, args.revision), args.out_dir, args.force)
    out.write(f"Pulled {args.repo_id}" + (f" at {args.revision}" if args.revision else "") + f" to {target}")
    return 0
