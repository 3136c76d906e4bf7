"""The pictures (`--svg FILE`) and pages (`--html FILE`) `place` and `plan` write: checked before the command's
work, so that a file in the way is refused before a model is read; written whole after it.

Imports only the standard library at its top; the drawing code is imported only when a picture is asked for.
"""

import argparse
import os
from typing import Callable, List, Tuple

KINDS = ("svg", "html")


def picture_targets(args: argparse.Namespace) -> List[Tuple[str, str]]:
    """`(kind, path)` of each picture asked for (`args.svg`, `args.html`), checked before any work: a folder that
    exists, no file but one the package drew unless `args.force`, not one file for both (a usage error)."""
    targets = [(kind, getattr(args, kind)) for kind in KINDS if getattr(args, kind) is not None]
    if not targets:
        return targets
    from ..placement.report.svg import written_here
    from .sources import CommandError

    if len(targets) == 2 and os.path.abspath(args.svg) == os.path.abspath(args.html):
        args.parser.error(f"--svg and --html name the same file, {args.svg}: give each its own")
    for kind, path in targets:
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise CommandError(f"{path}: is a folder; --{kind} takes the file to write")
        if not os.path.isdir(folder):
            raise CommandError(f"{path}: its folder {folder} does not exist")
        if os.path.exists(path) and not args.force:
            with open(path, encoding="utf-8", errors="replace") as reader:
                if not written_here(reader.read(2048)):
                    raise CommandError(f"{path}: exists and is not a picture or page {args.command} wrote; pass "
                                       "--force to overwrite it")
    return targets


def write_pictures(targets: List[Tuple[str, str]], draw: Callable[[str], str]) -> List[str]:
    """Writes each of `targets` whole, its text `draw(kind)`; returns the paths written, in order."""
    from ..settings.files import write_text_atomically

    for kind, path in targets:
        write_text_atomically(path, draw(kind))
    return [path for _, path in targets]
