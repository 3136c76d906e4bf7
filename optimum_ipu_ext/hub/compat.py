"""The Hub client as every supported stack has it: the token keyword of each transformers release, the arguments
a load passes, and the transport errors of huggingface_hub 0.x (requests) and 1.x and later (httpx)."""

import inspect
from typing import Any, Dict, Tuple, Type

import transformers
from huggingface_hub import (
    constants,
    get_token,
)
from transformers.utils.hub import cached_file

from ..errors import (
    InvalidSettingError,
)

try:  # huggingface_hub 1.x and later speak httpx
    from huggingface_hub.utils import httpx as _transport

    TRANSPORT_ERRORS: Tuple[Type[BaseException], ...] = (_transport.TransportError,)
    CONNECTION_CUT: Tuple[Type[BaseException], ...] = (_transport.RemoteProtocolError, _transport.ReadError)
except ImportError:  # huggingface_hub 0.x speaks requests
    import requests

    TRANSPORT_ERRORS = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)
    CONNECTION_CUT = (requests.exceptions.ChunkedEncodingError,)


LOGIN_HINT = "pass `token=` or log in with `hf auth login`"


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
        raise InvalidSettingError(
            "use_auth_token", "<hidden>", "it is the former name of `token`; pass the token once"
        )
    if given:
        kwargs[keyword] = given[0]
    return kwargs


def load_arguments(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """`from_pretrained` keyword arguments, as the installed optimum and transformers take them."""
    return with_token_keyword({**DEFAULT_LOAD_ARGUMENTS, **kwargs}, LOAD_TOKEN_KEYWORD)


def _token(kwargs: Dict[str, Any]) -> Any:
    """The token argument, given as `token` or `use_auth_token`: a token, `False` for none, `None` for the stored
    one."""
    return next((kwargs[name] for name in ("token", "use_auth_token") if kwargs.get(name) is not None), None)


def _token_given(kwargs: Dict[str, Any]) -> bool:
    """Whether a request would carry a token: one given as an argument, or the stored / `HF_TOKEN` one."""
    token = _token(kwargs)
    return token is not False and bool(token or get_token())


def _default_cache() -> str:
    """Where transformers caches Hub files by default (4.x: `TRANSFORMERS_CACHE`, else the hub cache)."""
    return getattr(transformers.utils.hub, "TRANSFORMERS_CACHE", None) or constants.HF_HUB_CACHE
