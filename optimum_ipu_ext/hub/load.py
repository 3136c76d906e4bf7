"""Loading an IPU config from the Hub: which file of which repository (`HubSource`), and loads that answer
promptly when the Hub is down (the cached copy, or one line saying the Hub cannot be reached)."""

import contextlib
import logging
import os
import posixpath
import threading
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar

from huggingface_hub import (
    constants,
    hf_hub_url,
    try_to_load_from_cache,
)
from huggingface_hub.errors import EntryNotFoundError, HFValidationError, LocalEntryNotFoundError
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, http_backoff
from transformers.utils.hub import is_offline_mode

from ..errors import (
    NO_SUCH_PATH,
    ConfigFileError,
    HubConfigFileError,
    HubError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubUnavailableError,
)
from ..settings.sources import check_local_source, close_preset
from .client_logs import quiet_retries
from .compat import TRANSPORT_ERRORS, _default_cache, _token, _token_given
from .failures import _chain, _classify, _first, _status_code

# How long a load waits for the client before asking the Hub once whether it is answering: the client retries a
# failing Hub for about 23 s (0.x: also with a cached copy) before it gives up or falls back to the cache.
PATIENCE = 2.0

logger = logging.getLogger(__name__)
T = TypeVar("T")


class HubSource:
    """The IPU config file `from_pretrained` reads from a Hub repository, and how.

    `named_by_user`: the repository is the name the user gave, which could have been a local path; a failure to find
    it says that no such path is here either. A further file of a repository already found is not.
    """

    def __init__(self, repo_id: str, config_name: str, kwargs: Dict[str, Any], named_by_user: bool = True):
        subfolder = kwargs.get("subfolder") or ""
        self.named_by_user = named_by_user
        self.repo_id = repo_id
        self.filename = posixpath.join(subfolder, config_name) if subfolder else config_name
        self.revision = kwargs.get("revision") or "main"
        self.cache_dir = str(kwargs.get("cache_dir") or _default_cache())
        self.local_files_only = bool(kwargs.get("local_files_only"))
        self.force_download = bool(kwargs.get("force_download"))
        self.token = _token(kwargs)
        self.token_given = _token_given(kwargs)

    @classmethod
    def of(cls, path: Any, config_name: str, kwargs: Dict[str, Any]) -> Optional["HubSource"]:
        """The Hub source `from_pretrained(path, **kwargs)` reads, or `None` when `path` is a local file or folder.

        Raises `ConfigFileError`, without a request, for a local path that holds no config.
        """
        path = str(path)
        subfolder = kwargs.get("subfolder") or ""
        if os.path.isfile(os.path.join(subfolder, path)):  # transformers also looks for `path` in `subfolder`
            return None
        check_local_source(path, config_name, subfolder)
        return None if os.path.exists(path) else cls(path, config_name, kwargs)

    @property
    def action(self) -> str:
        return f"load '{self.filename}' from"

    def __str__(self) -> str:
        return f"'{self.filename}' of Hub repository '{self.repo_id}' at revision '{self.revision}'"

    def is_known_missing(self) -> bool:
        """Whether the cache records that the file does not exist at this revision (the client writes that)."""
        cached = try_to_load_from_cache(self.repo_id, self.filename, cache_dir=self.cache_dir, revision=self.revision)
        return cached is not None and not isinstance(cached, str)

    def cached_copy(self) -> Optional[str]:
        """The path of the cached copy of the file at this revision, if the cache holds one."""
        cached = try_to_load_from_cache(self.repo_id, self.filename, cache_dir=self.cache_dir, revision=self.revision)
        return cached if isinstance(cached, str) else None

    def outage(self) -> Optional[Exception]:
        """Asks the Hub once, without retrying, for the file: the error if the Hub is down or failing, else `None`."""
        url = hf_hub_url(self.repo_id, self.filename, revision=self.revision)
        try:
            with quiet_retries():
                response = http_backoff("HEAD", url, max_retries=0, headers=build_hf_headers(token=self.token),
                                        timeout=constants.HF_HUB_ETAG_TIMEOUT)
            hf_raise_for_status(response)
        except Exception as error:
            if isinstance(error, TRANSPORT_ERRORS) or (_status_code(error) or 0) >= 500:
                return error
        return None


def load_promptly(source: Optional[HubSource], load: Callable[..., T]) -> T:
    """`load()`, answering within about `PATIENCE` seconds when the Hub is down or answers with server errors.

    The client retries a failing Hub for about 23 s. When `load()` has not returned after `PATIENCE` seconds, the
    Hub is asked once whether it is answering. If it is not, the cached copy is loaded with
    `load(local_files_only=True)`, or, with no cached copy (or `force_download`), the Hub's failure is raised; the
    client's attempt is
    left to finish in the background. A Hub that answers is waited for as long as the client waits.
    """
    if source is None or source.local_files_only or constants.HF_HUB_OFFLINE or is_offline_mode():
        return load()
    outcome: Dict[str, Any] = {}
    finished = threading.Event()

    def attempt() -> None:
        try:
            with quiet_retries():  # the outcome is reported by the caller
                outcome["value"] = load()
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error
        finally:
            finished.set()

    threading.Thread(target=attempt, name=f"optimum-ipu-ext: load {source}", daemon=True).start()
    if not finished.wait(PATIENCE):
        failure = source.outage()
        if failure is not None and (source.force_download or source.cached_copy() is None):
            raise failure
        if failure is not None:
            found = _classify([failure], source.token_given, writing=False)
            logger.warning(f"Loading the cached copy of {source}: {found[1] if found else failure}.")
            return load(local_files_only=True)
        finished.wait()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextlib.contextmanager
def load_errors(source: Optional[HubSource]) -> Iterator[None]:
    """Re-raises what loading from `source` raised as an error of this package that says what happened."""
    if source is None:
        yield
        return
    try:
        yield
    except Exception as error:
        translated = _load_error(error, source)
        if translated is None:
            raise
        raise translated from error


def _load_error(error: Exception, source: HubSource) -> Optional[Exception]:
    chain = list(_chain(error))
    config_file = _first(chain, ConfigFileError)
    if config_file is not None:
        return HubConfigFileError(
            source.repo_id, config_file.problem, source.action, source.revision, path=config_file.path
        )
    invalid_id = _first(chain, HFValidationError)
    if invalid_id is not None:
        return ConfigFileError(source.repo_id, f"{NO_SUCH_PATH}, and not a Hub repository id ({invalid_id})")
    # transformers 5 reports a missing file with a bare OSError; the client has recorded the miss in the cache
    if _first(chain, EntryNotFoundError, excluding=LocalEntryNotFoundError) is not None or (
        isinstance(error, OSError) and not isinstance(error, HubError) and source.is_known_missing()
    ):
        problem = f"the repository has no file '{source.filename}' at this revision"
        return HubFileNotFoundError(source.repo_id, problem, source.action, source.revision)
    found = _classify(chain, source.token_given, writing=False)
    if found is None and source.local_files_only and _first(chain, LocalEntryNotFoundError) is not None:
        found = HubUnavailableError, "`local_files_only=True`"
    if found is None:
        return None
    error_class, problem = found
    if source.named_by_user and error_class in (HubRepositoryNotFoundError, HubUnavailableError):  # nor a local path
        problem = f"{NO_SUCH_PATH} here, and {problem}"
    if error_class is HubUnavailableError and source.force_download and source.cached_copy() is not None:
        problem += ", and `force_download=True` refuses the cached copy"
    elif error_class is HubUnavailableError:
        problem += f", and the cache ({source.cache_dir}) holds no copy of the file"
    nearest = close_preset(source.repo_id) if source.named_by_user else None
    if nearest is not None and error_class in (HubRepositoryNotFoundError, HubUnavailableError):
        problem += f"; did you mean the preset {nearest}?"
    return error_class(source.repo_id, problem, source.action, source.revision)
