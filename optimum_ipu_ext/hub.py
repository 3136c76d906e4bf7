"""The Hub side of `IPUConfig`: one token keyword on every stack, errors that say what happened to which
repository, loads that answer promptly when the Hub is down, and pushes that keep the repository's model card.

Loading goes through optimum's `BaseConfig` (transformers' `cached_file`); pushing goes through `HfApi`, which
reads the repository first (its visibility, its head commit, its `README.md`) and then commits the config and the
card together on top of that head. This module adapts arguments to the installed versions and translates the
client's errors into the package's own.
"""

import contextlib
import http
import inspect
import json
import logging
import os
import posixpath
import threading
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Type, TypeVar

import transformers
from huggingface_hub import (
    CommitInfo,
    CommitOperationAdd,
    HfApi,
    ModelCard,
    ModelCardData,
    constants,
    get_token,
    hf_hub_download,
    hf_hub_url,
    try_to_load_from_cache,
)
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, http_backoff
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from transformers.utils.hub import cached_file, is_offline_mode

from .errors import (
    ConfigFileError,
    HubAccessDeniedError,
    HubConfigFileError,
    HubError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
    HubVisibilityError,
    InvalidSettingError,
)
from .client_logs import quiet_retries
from .core import NO_SUCH_PATH, check_local_source
from .settings import EXTENSION_SETTINGS

try:  # huggingface_hub 1.x and later speak httpx
    from huggingface_hub.utils import httpx as _transport

    TRANSPORT_ERRORS: Tuple[Type[BaseException], ...] = (_transport.TransportError,)
    CONNECTION_CUT: Tuple[Type[BaseException], ...] = (_transport.RemoteProtocolError, _transport.ReadError)
except ImportError:  # huggingface_hub 0.x speaks requests
    import requests

    TRANSPORT_ERRORS = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)
    CONNECTION_CUT = (requests.exceptions.ChunkedEncodingError,)

CARD_NAME = "README.md"
CARD_TAGS = ("ipu", "graphcore", "ipu-config", "optimum-graphcore", "optimum-ipu-ext")
SECTION_START = "<!-- optimum-ipu-ext: start of the IPU config section, rewritten on every push -->"
SECTION_END = "<!-- optimum-ipu-ext: end of the IPU config section -->"
LOGIN_HINT = "pass `token=` or log in with `hf auth login`"
# How long a load waits for the client before asking the Hub once whether it is answering: the client retries a
# failing Hub for about 23 s (0.x: also with a cached copy) before it gives up or falls back to the cache.
PATIENCE = 2.0

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _token_keyword(function) -> str:
    """`use_auth_token` for transformers releases that take only that name (4.29.2 on IPU hosts), else `token`."""
    parameters = inspect.signature(function).parameters
    return "use_auth_token" if "use_auth_token" in parameters and "token" not in parameters else "token"


LOAD_TOKEN_KEYWORD = _token_keyword(cached_file)
# transformers 4.x passes `resume_download=False` to the client unless told otherwise, and huggingface_hub 0.2x+
# warns (FutureWarning) whenever it is not None; `None` is what the client does anyway (it always resumes)
DEFAULT_LOAD_ARGUMENTS = {"resume_download": None} if "resume_download" in inspect.signature(cached_file).parameters \
    else {}


def with_token_keyword(kwargs: Dict[str, Any], keyword: str) -> Dict[str, Any]:
    """`kwargs` with the token, given as `token` or `use_auth_token`, under `keyword`."""
    kwargs = dict(kwargs)
    given = [kwargs.pop(name) for name in ("token", "use_auth_token") if name in kwargs]
    given = [token for token in given if token is not None]
    if len(given) == 2:
        raise InvalidSettingError("use_auth_token", "<hidden>", "it is the former name of `token`; pass the token once")
    if given:
        kwargs[keyword] = given[0]
    return kwargs


def load_arguments(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """`from_pretrained` keyword arguments, as the installed optimum and transformers take them."""
    return with_token_keyword({**DEFAULT_LOAD_ARGUMENTS, **kwargs}, LOAD_TOKEN_KEYWORD)


def _token(kwargs: Dict[str, Any]) -> Any:
    """The token argument, given as `token` or `use_auth_token`: a token, `False` for none, `None` for the stored one."""
    return next((kwargs[name] for name in ("token", "use_auth_token") if kwargs.get(name) is not None), None)


def _token_given(kwargs: Dict[str, Any]) -> bool:
    """Whether a request would carry a token: one given as an argument, or the stored / `HF_TOKEN` one."""
    token = _token(kwargs)
    return token is not False and bool(token or get_token())


def _default_cache() -> str:
    """Where transformers caches Hub files by default (4.x: `TRANSFORMERS_CACHE`, else the hub cache)."""
    return getattr(transformers.utils.hub, "TRANSFORMERS_CACHE", None) or constants.HF_HUB_CACHE


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


@contextlib.contextmanager
def push_errors(repo_id: str, kwargs: Dict[str, Any]) -> Iterator[None]:
    """Re-raises what pushing to `repo_id` raised as a `HubError` that says what happened."""
    action = "open a pull request on" if kwargs.get("create_pr") else "push the IPU config to"
    with hub_errors(repo_id, action, kwargs.get("revision"), _token_given(kwargs), writing=True):
        yield


@contextlib.contextmanager
def hub_errors(repo_id: str, action: str, revision: Optional[str], token_given: bool, writing: bool) -> Iterator[None]:
    """Re-raises the client's errors (and those of its transport) as the `HubError` they stand for; other errors
    pass unchanged. The client's retry lines stay off stderr: the error says what happened."""
    try:
        with quiet_retries():
            yield
    except Exception as error:
        found = _classify(list(_chain(error)), token_given, writing)
        if found is None:
            raise
        error_class, problem = found
        raise error_class(repo_id, problem, action, revision) from error


def _chain(error: Optional[BaseException]) -> Iterator[BaseException]:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _first(chain: List[BaseException], types: Any, excluding: Any = ()) -> Optional[BaseException]:
    return next((error for error in chain if isinstance(error, types) and not isinstance(error, excluding)), None)


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
    return error_class(source.repo_id, problem, source.action, source.revision)


def _classify(chain: List[BaseException], token_given: bool, writing: bool) -> Optional[Tuple[type, str]]:
    """The `HubError` class and problem that the client errors in `chain` stand for, or `None` for other errors."""
    endpoint = constants.ENDPOINT
    no_token = f"no token was given ({LOGIN_HINT})"
    if _first(chain, GatedRepoError) is not None:
        return HubAccessDeniedError, "the repository is gated: request access on its page, then use a token that has it"
    reader = "the token given cannot read it" if token_given else no_token
    not_found = f"it does not exist on {endpoint}, or it is private and {reader}"
    if _first(chain, RepositoryNotFoundError) is not None:
        return HubRepositoryNotFoundError, not_found
    if _first(chain, RevisionNotFoundError) is not None:
        return HubRevisionNotFoundError, "no branch, tag or commit of the repository has that name"
    if _first(chain, OfflineModeIsEnabled) is not None or (
        _first(chain, LocalEntryNotFoundError) is not None and (constants.HF_HUB_OFFLINE or is_offline_mode())
    ):
        return HubUnavailableError, "offline mode is on (HF_HUB_OFFLINE=1)"
    answered = next((error for error in chain if _status_code(error) is not None), None)
    if answered is not None:
        code = _status_code(answered)
        status = f"{code} {_phrase(code)}"
        server_message = getattr(_first(chain, HfHubHTTPError), "server_message", None)
        status += f": {server_message}" if server_message else ""
        if code == 401 and token_given:
            return HubAccessDeniedError, f"the Hub rejected the token ({status})"
        if code == 401:
            return HubAccessDeniedError, f"{no_token}, and {'pushing' if writing else 'reading it'} needs one"
        if code == 403:
            return HubAccessDeniedError, f"the token may not {'write to' if writing else 'read'} it ({status})"
        if code == 404:
            return HubRepositoryNotFoundError, not_found
        return HubUnavailableError, f"the Hub at {endpoint} answered {status}"
    cut = _first(chain, CONNECTION_CUT)
    if cut is not None:
        problem = f"the connection to the Hub at {endpoint} was cut during the transfer ({_root(cut)})"
        return HubUnavailableError, problem
    unreachable = _first(chain, TRANSPORT_ERRORS)
    if unreachable is not None:
        return HubUnavailableError, f"the Hub at {endpoint} cannot be reached ({_root(unreachable)})"
    return None


def _status_code(error: BaseException) -> Optional[int]:
    """The HTTP status of the answer an error (the client's, requests' or httpx's) carries, if any."""
    return getattr(getattr(error, "response", None), "status_code", None)


def _root(error: BaseException) -> BaseException:
    """The innermost cause of `error`: what actually happened on the connection."""
    return list(_chain(error))[-1]


def _phrase(status_code: int) -> str:
    try:
        return http.HTTPStatus(status_code).phrase
    except ValueError:
        return ""


# Pushing

class PushOutcome(NamedTuple):
    """What a push did: the client's `CommitInfo`, and whether it changed anything (a commit or a pull request)."""

    commit: CommitInfo
    changed: bool


def push_config(config: Any, repo_id: str, kwargs: Dict[str, Any]) -> PushOutcome:
    """Commits `config` and its model card to `repo_id`; `kwargs` are `IPUConfig.push_to_hub`'s.

    The repository is read first: a `private=True` push to a public repository stops there, before anything is
    created or uploaded. The config and the card are committed together, on top of the commit whose card was read
    (`parent_commit`), so that a card edited in between is never overwritten.
    """
    kwargs = with_token_keyword(kwargs, "token")
    with push_errors(repo_id, kwargs):
        return _push(config, repo_id, **kwargs)


def _push(
    config: Any,
    repo_id: str,
    token: Any = None,
    private: Optional[bool] = None,
    revision: Optional[str] = None,
    create_pr: bool = False,
    commit_message: Optional[str] = None,
    commit_description: Optional[str] = None,
    tags: Sequence[str] = (),
) -> PushOutcome:
    api = HfApi(token=token)
    if "/" not in repo_id:  # in the user's namespace, as `create_repo` would put it
        repo_id = f"{api.whoami()['name']}/{repo_id}"
    info = _repo_info(api, repo_id, revision)
    if private and info is not None and not info.private:
        raise HubVisibilityError(repo_id, "push the IPU config to", constants.ENDPOINT)
    if info is None:
        api.create_repo(repo_id, private=private, exist_ok=True)
    if revision and not create_pr:
        api.create_branch(repo_id, branch=revision, exist_ok=True)
    head = info.sha if info is not None else None
    try:
        card = card_text(config, repo_id, _read_card(repo_id, info, token), tags)
    except ValueError as error:
        raise HubError(repo_id, str(error), "push the IPU config to") from error
    operations = [
        CommitOperationAdd(config.CONFIG_NAME, config.to_json_string().encode("utf-8")),
        CommitOperationAdd(CARD_NAME, card.encode("utf-8")),
    ]
    commit = api.create_commit(
        repo_id,
        operations,
        commit_message=commit_message or "Upload IPU config",
        commit_description=commit_description,
        revision=revision,
        create_pr=create_pr,
        parent_commit=head,
    )
    changed = bool(commit.pr_url) or commit.oid != head
    if not changed:
        logger.warning(f"No change: {repo_id} already holds this config; nothing was committed"
                       + (" and no pull request opened." if create_pr else "."))
    return PushOutcome(commit, changed)


def _repo_info(api: HfApi, repo_id: str, revision: Optional[str]) -> Any:
    """The repository at `revision` (at `main` when that branch is still to be created), or `None` if it does not
    exist (or is private and the token cannot read it: creating it then fails as it should)."""
    try:
        return api.repo_info(repo_id, revision=revision)
    except RepositoryNotFoundError:
        return None
    except RevisionNotFoundError:
        if revision is None:
            raise
        return api.repo_info(repo_id)


def _read_card(repo_id: str, info: Any, token: Any) -> Optional[str]:
    """The text of the repository's `README.md` at the commit of `info`, or `None` when it has none."""
    if info is None or (info.siblings is not None and CARD_NAME not in {s.rfilename for s in info.siblings}):
        return None
    try:
        path = hf_hub_download(repo_id, CARD_NAME, revision=info.sha, token=token)
    except EntryNotFoundError:
        return None
    with open(path, encoding="utf-8", newline="") as card:  # line endings as they are
        return card.read()


# The model card

def card_text(config: Any, repo_id: str, existing: Optional[str] = None, tags: Sequence[str] = ()) -> str:
    """The `README.md` to push with `config`: `existing` (the repository's card) with the IPU config section added
    or replaced, and the metadata it lacks; a new card when there is none.

    Everything outside the section is kept byte for byte, except the metadata block when it lacks a key the card
    needs (`library_name`, the IPU tags): the client's card API then writes the block again, with every key kept.
    `library_name` is set only when absent: optimum-graphcore when its own `IPUConfig` loads the file, else
    optimum-ipu-ext.
    """
    saved = json.loads(config.to_json_string())
    extension = [name for name in saved if name in EXTENSION_SETTINGS]
    library = "optimum-ipu-ext" if extension else "optimum-graphcore"
    section = f"{SECTION_START}\n{_card_body(config, repo_id, extension)}{SECTION_END}\n"
    wanted_tags = list(dict.fromkeys(CARD_TAGS + tuple(tags)))
    if existing is None:
        data = ModelCardData(library_name=library, tags=wanted_tags)
        return f"---\n{data.to_yaml()}\n---\n\n{section}"
    try:
        card = ModelCard(existing)
    except Exception as error:  # the card's YAML is not a mapping, or not YAML
        raise ValueError(f"its {CARD_NAME} has a metadata block that cannot be read ({error}); fix it, then push "
                         "again") from error
    line_break = "\r\n" if "\r\n" in existing else "\n"
    text = _with_section(card.text, section.replace("\n", line_break), line_break)
    present = list(card.data.tags or [])
    if card.data.library_name and all(tag in present for tag in wanted_tags):
        return existing[: len(existing) - len(card.text)] + text  # the metadata block as it was
    card.data.library_name = card.data.library_name or library
    card.data.tags = present + [tag for tag in wanted_tags if tag not in present]
    card.text = text
    return card.content


def _with_section(text: str, section: str, line_break: str) -> str:
    """`text` with the IPU config section replaced in place, or appended when it has none."""
    starts, ends = text.count(SECTION_START), text.count(SECTION_END)
    if starts == ends == 0:
        separator = "" if not text or text.endswith(line_break) else line_break
        return f"{text}{separator}{line_break if text.strip() else ''}{section}"
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    if starts != 1 or ends != 1 or end < start:
        raise ValueError(f"its {CARD_NAME} should hold the IPU config section once, between the lines "
                         f"'{SECTION_START}' and '{SECTION_END}'; repair the card, then push again")
    end += len(SECTION_END)
    end += len(line_break) if text.startswith(line_break, end) else 0
    return text[:start] + section + text[end:]


def _card_body(config: Any, repo_id: str, extension: List[str]) -> str:
    training, inference = config.batch_size_factor(), config.batch_size_factor(for_inference=True)
    rows = [
        ("pipeline length (IPUs per replica)", config.ipus_per_replica, config.inference_ipus_per_replica),
        ("replication factor", config.replication_factor, config.inference_replication_factor),
        ("IPUs in use", config.ipus_per_replica * config.replication_factor,
         config.inference_ipus_per_replica * config.inference_replication_factor),
        ("gradient accumulation steps", config.gradient_accumulation_steps, "-"),
        ("device iterations", config.device_iterations, config.inference_device_iterations),
        ("combined batch size factor", training, inference),
    ]
    lines = [
        "## IPU configuration",
        "",
        "`ipu_config.json` is an `IPUConfig` for [optimum-graphcore](https://github.com/huggingface/optimum-graphcore): "
        "how a model is pipelined over Graphcore IPUs, replicated and fed, and the PopTorch/PopART options of the "
        "build.",
        "",
        "| | training | inference |",
        "| --- | --- | --- |",
        *(f"| {name} | {train} | {infer} |" for name, train, infer in rows),
        "",
        "Combined batch size = micro batch size x combined batch size factor (replication factor x gradient "
        "accumulation steps x device iterations).",
        "",
        "### Settings that differ from the defaults",
        "",
        *_non_default_rows(config),
        "",
        "### Use it",
        "",
        "```python",
        "from optimum_ipu_ext import IPUConfig",
        "",
        f'ipu_config = IPUConfig.from_pretrained("{repo_id}")',
        "print(ipu_config.options_plan())  # the poptorch.Options calls it makes",
        "```",
        "",
    ]
    if extension:
        names = ", ".join(f"`{name}`" for name in extension)
        lines.append(f"It uses settings of optimum-ipu-ext ({names}), so optimum-graphcore's own `IPUConfig` cannot "
                     "load it.")
    else:
        lines.append("optimum-graphcore's own `IPUConfig.from_pretrained` loads it too.")
    lines += ["", "optimum-ipu-ext writes this section from the config and rewrites it on every push; it leaves the "
              "rest of the card as it is."]
    return "\n".join(lines) + "\n"


def _non_default_rows(config: Any) -> List[str]:
    """Table rows of the settings that differ from a default config's. An `inference_` setting that only
    repeats its training value is left out."""
    rows = [
        f"| `{name}` | `{json.dumps(value)}` | `{json.dumps(default)}` |"
        for name, (value, default) in config.non_default_settings().items()
        if not (name.startswith("inference_") and getattr(config, name[len("inference_"):], None) == value)
    ]
    if not rows:
        return ["None: every setting has its default."]
    return ["| setting | value | default |", "| --- | --- | --- |", *rows]
