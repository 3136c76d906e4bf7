"""The Hub client's failures as the package's errors: what happened, to which repository and revision, and what to do
about it (`HubError` and its subclasses)."""

import contextlib
import http
from typing import Any, Dict, Iterator, List, Optional, Tuple

from huggingface_hub import (
    constants,
)
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from transformers.utils.hub import is_offline_mode

from ..errors import (
    HubAccessDeniedError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
)
from .client_logs import quiet_retries
from .compat import CONNECTION_CUT, LOGIN_HINT, TRANSPORT_ERRORS, _token_given


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


def _classify(chain: List[BaseException], token_given: bool, writing: bool) -> Optional[Tuple[type, str]]:
    """The `HubError` class and problem that the client errors in `chain` stand for, or `None` for other errors."""
    endpoint = constants.ENDPOINT
    no_token = f"no token was given ({LOGIN_HINT})"
    if _first(chain, GatedRepoError) is not None:
        gated = "the repository is gated: request access on its page, then use a token that has it"
        return HubAccessDeniedError, gated
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
