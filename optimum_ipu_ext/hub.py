"""The Hub side of `IPUConfig`: one token keyword on every stack, errors that say what happened to which
repository, and the model card pushed with the config.

Loading goes through optimum's `BaseConfig` and pushing through transformers' `PushToHubMixin`; this module
adapts their arguments to the installed versions and translates their errors into the package's own.
"""

import contextlib
import http
import inspect
import json
import os
import posixpath
from typing import Any, Dict, Iterator, List, Optional, Tuple, Type

import transformers
from huggingface_hub import ModelCard, ModelCardData, constants, get_token, try_to_load_from_cache
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
from transformers.utils.hub import PushToHubMixin, cached_file, is_offline_mode

from .errors import (
    ConfigFileError,
    HubAccessDeniedError,
    HubConfigFileError,
    HubError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
    InvalidSettingError,
)
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
LOGIN_HINT = "pass `token=` or log in with `hf auth login`"

PUSH_PARAMETERS = inspect.signature(PushToHubMixin.push_to_hub).parameters
NEWER_PUSH_ARGUMENTS = {
    "revision": "push to the default branch, or open a pull request with `create_pr=True`",
    "commit_description": "put the description in `commit_message`",
    "tags": "the model card already carries the IPU tags",
}


def _token_keyword(function) -> str:
    """`use_auth_token` for transformers releases that take only that name (4.29.2 on IPU hosts), else `token`."""
    parameters = inspect.signature(function).parameters
    return "use_auth_token" if "use_auth_token" in parameters and "token" not in parameters else "token"


LOAD_TOKEN_KEYWORD = _token_keyword(cached_file)
PUSH_TOKEN_KEYWORD = _token_keyword(PushToHubMixin.push_to_hub)


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
    return with_token_keyword(kwargs, LOAD_TOKEN_KEYWORD)


def push_arguments(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """`push_to_hub` keyword arguments, as the installed `PushToHubMixin` takes them.

    Arguments this transformers release would silently drop are errors; files are always written to a
    temporary folder, never to a folder of the working directory named like the repository.
    """
    kwargs = with_token_keyword(kwargs, PUSH_TOKEN_KEYWORD)
    for name, instead in NEWER_PUSH_ARGUMENTS.items():
        if kwargs.get(name) is not None and name not in PUSH_PARAMETERS:
            raise InvalidSettingError(
                name, kwargs[name], f"transformers {transformers.__version__} cannot push with `{name}`: {instead}"
            )
    if "use_temp_dir" in PUSH_PARAMETERS:
        kwargs.setdefault("use_temp_dir", True)
    return kwargs


def _token_given(kwargs: Dict[str, Any]) -> bool:
    """Whether a request would carry a token: one given as an argument, or the stored / `HF_TOKEN` one."""
    token = next((kwargs[name] for name in ("token", "use_auth_token") if kwargs.get(name) is not None), None)
    return token is not False and bool(token or get_token())


def _default_cache() -> str:
    """Where transformers caches Hub files by default (4.x: `TRANSFORMERS_CACHE`, else the hub cache)."""
    return getattr(transformers.utils.hub, "TRANSFORMERS_CACHE", None) or constants.HF_HUB_CACHE


class HubSource:
    """The IPU config file `from_pretrained` reads from a Hub repository, and how."""

    def __init__(self, repo_id: str, config_name: str, kwargs: Dict[str, Any]):
        subfolder = kwargs.get("subfolder") or ""
        self.repo_id = repo_id
        self.filename = posixpath.join(subfolder, config_name) if subfolder else config_name
        self.revision = kwargs.get("revision") or "main"
        self.cache_dir = str(kwargs.get("cache_dir") or _default_cache())
        self.local_files_only = bool(kwargs.get("local_files_only"))
        self.token_given = _token_given(kwargs)

    @classmethod
    def of(cls, path: Any, config_name: str, kwargs: Dict[str, Any]) -> Optional["HubSource"]:
        """The Hub source `from_pretrained(path, **kwargs)` reads, or `None` when `path` is a local file or folder."""
        path = str(path)
        if os.path.exists(path) or os.path.isfile(os.path.join(kwargs.get("subfolder") or "", path)):
            return None
        return cls(path, config_name, kwargs)

    @property
    def action(self) -> str:
        return f"load '{self.filename}' from"

    def __str__(self) -> str:
        return f"'{self.filename}' of Hub repository '{self.repo_id}' at revision '{self.revision}'"

    def is_known_missing(self) -> bool:
        """Whether the cache records that the file does not exist at this revision (the client writes that)."""
        cached = try_to_load_from_cache(self.repo_id, self.filename, cache_dir=self.cache_dir, revision=self.revision)
        return cached is not None and not isinstance(cached, str)


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
    try:
        yield
    except Exception as error:
        found = _classify(list(_chain(error)), _token_given(kwargs), writing=True)
        if found is None:
            raise
        error_class, problem = found
        raise error_class(repo_id, problem, action, kwargs.get("revision")) from error


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
        return ConfigFileError(source.repo_id, f"no such file or folder, and not a Hub repository id ({invalid_id})")
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
    if error_class is HubRepositoryNotFoundError and source.repo_id.endswith(".json"):
        problem += "; nor is there a local file of that name"
    if error_class is HubUnavailableError:
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


def model_card(config: Any, repo_id: str, tags: Tuple[str, ...] = ()) -> ModelCard:
    """The model card of an IPU config pushed to `repo_id`: what it sets up, and metadata to find it by.

    `library_name` is the library whose `IPUConfig` loads the file: optimum-graphcore when it uses none of
    the settings this package adds, else optimum-ipu-ext.
    """
    saved = json.loads(config.to_json_string())
    extension = [name for name in saved if name in EXTENSION_SETTINGS]
    library = "optimum-ipu-ext" if extension else "optimum-graphcore"
    data = ModelCardData(library_name=library, tags=list(dict.fromkeys(CARD_TAGS + tuple(tags))))
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{_card_body(config, repo_id, extension)}")


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
        f"# IPU configuration `{repo_id}`",
        "",
        "An `IPUConfig` for [optimum-graphcore](https://github.com/huggingface/optimum-graphcore): how a model is "
        "pipelined over Graphcore IPUs, replicated and fed, and the PopTorch/PopART options of the build. It holds "
        "no model weights.",
        "",
        "| | training | inference |",
        "| --- | --- | --- |",
        *(f"| {name} | {train} | {infer} |" for name, train, infer in rows),
        "",
        "Combined batch size = micro batch size x combined batch size factor (replication factor x gradient "
        "accumulation steps x device iterations).",
        "",
        "## Settings that differ from the defaults",
        "",
        *_non_default_rows(config),
        "",
        "## Use it",
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
    lines += ["", "This card is written by `push_to_hub` from the config, and rewritten on every push."]
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


def write_model_card(config: Any, directory: str, repo_id: str) -> None:
    """Writes the model card as `README.md` in `directory`, keeping the tags of a card already there."""
    path = os.path.join(directory, CARD_NAME)
    tags: Tuple[str, ...] = ()
    if os.path.isfile(path):
        tags = tuple(ModelCard.load(path).data.tags or ())
    model_card(config, repo_id, tags).save(path)
