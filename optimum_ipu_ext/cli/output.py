"""Terminal output of `ipu-config`: styles and a spinner on terminals only, and the warnings to relay."""

import contextlib
import itertools
import logging
import os
import sys
import threading
import warnings
from typing import Iterator, List

from ..errors import ConfigMigrationWarning

PROG = "ipu-config"


class Stream:
    """A text stream that styles text only when it is a terminal (and neither `NO_COLOR` nor `TERM=dumb` is set).

    A reader that goes away (`ipu-config show ... | head -1`) is no error: the stream then writes nothing more,
    and the command carries on to its end, so that what it writes to files and its exit code do not depend on
    who reads its output.
    """

    CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33"}

    def __init__(self, stream):
        self.stream = stream
        self.is_terminal = hasattr(stream, "isatty") and stream.isatty()
        self.colour = self.is_terminal and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
        self.reader_gone = False

    def style(self, text: str, name: str) -> str:
        return f"\033[{self.CODES[name]}m{text}\033[0m" if self.colour and text else text

    def write(self, text: str = "") -> None:
        """Writes `text` as a line."""
        self.text(text + "\n")

    def text(self, text: str) -> None:
        """Writes `text` as it is, at once; nothing once the reader has gone away."""
        if self.reader_gone:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.reader_gone = True
            discard_output(self.stream)


def discard_output(stream) -> None:
    """Points the file descriptor of `stream` at the null device, so that what is still buffered is dropped there
    when Python flushes it at exit, rather than reported as a `BrokenPipeError` (as the Python documentation of
    SIGPIPE recommends)."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # a stream without a file descriptor has nothing to flush at exit
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def one_line(error: BaseException) -> str:
    """An error message on one line."""
    return " ".join(str(error).split()) or type(error).__name__


@contextlib.contextmanager
def progress(stream: Stream, message: str) -> Iterator[None]:
    """A spinner and `message` on `stream` while the block runs, when `stream` is a terminal."""
    if not stream.is_terminal:
        yield
        return
    done = threading.Event()

    def spin():
        for frame in itertools.cycle("|/-\\"):
            stream.stream.write(f"\r{frame} {message}")
            stream.stream.flush()
            if done.wait(0.1):
                break
        stream.stream.write("\r" + " " * (len(message) + 2) + "\r")
        stream.stream.flush()

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        yield
    finally:
        done.set()
        spinner.join()


class _Recorder(logging.Handler):
    """Hands warning records to the innermost `recorded_warnings` block."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.blocks: List[List[str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not _printed_by_its_library(logging.getLogger(record.name)):
            self.blocks[-1].append(record.getMessage())


_recorder = _Recorder()


def _printed_by_its_library(logger: logging.Logger) -> bool:
    """Whether a handler below the root (transformers', huggingface_hub's) already prints this logger's records."""
    while logger is not None and logger is not logging.root:
        if logger.handlers:
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def _from_configuration(filename: str) -> bool:
    """Whether a warning was raised by the configuration classes (ours or the base), not a library they call."""
    base = sys.modules.get("optimum_ipu_ext.config.base")
    names = ("optimum_ipu_ext", getattr(base, "BASE_ORIGIN", None))
    folders = {os.path.dirname(os.path.abspath(sys.modules[name].__file__)) for name in names if name in sys.modules}
    path = os.path.abspath(filename)
    return any(os.path.commonpath([folder, path]) == folder for folder in folders)


@contextlib.contextmanager
def recorded_warnings() -> Iterator[List[str]]:
    """Collects, in order and once each, the configuration's warnings (Python's and logged) raised in the block.

    The class logs some warnings each time it validates, which a command may do several times. Python warnings
    from the libraries it calls (deprecations between them) are dropped: they are not the user's to act on.
    """
    messages: List[str] = []
    if not _recorder.blocks:
        logging.getLogger().addHandler(_recorder)
    _recorder.blocks.append(messages)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield messages
    finally:
        _recorder.blocks.pop()
        if not _recorder.blocks:
            logging.getLogger().removeHandler(_recorder)
        messages.extend(str(warning.message) for warning in caught
                        if _from_configuration(warning.filename) or warning.category is ConfigMigrationWarning)
        messages[:] = list(dict.fromkeys(messages))
