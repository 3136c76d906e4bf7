"""The Hub client's log lines about the requests it retries, kept off stderr while the package makes the requests:
it reports their outcome itself, in one error (or one warning, where it falls back to the cache)."""

import contextlib
import logging
import threading
from typing import Iterator, Set

# Where the client logs its retries: huggingface_hub's back-off ("... thrown while requesting HEAD ...", "Retrying
# in 1s [Retry 1/5].") and, under it, urllib3's connection pool
RETRY_LOGGERS = ("huggingface_hub.utils._http", "urllib3.connectionpool")


class _QuietThreads(logging.Filter):
    """Drops the records of the threads making the package's requests."""

    def __init__(self):
        super().__init__()
        self.threads: Set[int] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread not in self.threads


_quiet = _QuietThreads()


@contextlib.contextmanager
def quiet_retries() -> Iterator[None]:
    """Drops the client's retry log lines that this thread logs in the block (other threads log as usual)."""
    for name in RETRY_LOGGERS:
        logger = logging.getLogger(name)
        if _quiet not in logger.filters:
            logger.addFilter(_quiet)
    thread = threading.get_ident()
    outermost = thread not in _quiet.threads
    _quiet.threads.add(thread)
    try:
        yield
    finally:
        if outermost:
            _quiet.threads.discard(thread)
