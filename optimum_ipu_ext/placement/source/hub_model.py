"""A model on the Hugging Face Hub as a placement reads it: its `config.json`, and the tensors of its safetensors
checkpoint from the files' headers alone (range requests of about 100 kB a file, never the weights).

`config.json` and a sharded checkpoint's index are Hub files like any other: `hf_hub_download` caches them where
transformers does and reads them from there offline. The tensors read from the headers are cached by commit, one
JSON file per commit of a repository in the client's cache of library assets
(`$HF_HOME/assets/optimum-ipu-ext/<org>--<name>/safetensors-headers/<commit>.json`). A commit never changes, so with
a warm cache a read makes only the request a warm `from_pretrained` makes (whether `config.json` moved at that
revision; none for a commit sha), and offline none.

Failures raise the errors `IPUConfig.from_pretrained` raises (hub.py), naming the repository and the revision; a
file that is not what it should be raises `ModelFileError` naming it as `hf://<org>/<name>@<revision>/<file>`.
"""

import functools
import json
import logging
import os
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, TypeVar, Union
from urllib.parse import quote

from huggingface_hub import cached_assets_path, constants, hf_hub_download, hf_hub_url
from huggingface_hub.errors import EntryNotFoundError, HFValidationError, LocalEntryNotFoundError
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status, validate_repo_id

from ...errors import HubFileNotFoundError, ModelFileError
from ...hub.failures import hub_errors
from ...hub.load import HubSource, load_errors, load_promptly
from ...settings.files import write_text_atomically
from .checkpoint import (
    INDEX_FILE,
    SINGLE_FILE,
    TensorHeader,
    header_length,
    parse_config,
    parse_header,
    parse_index,
    sharded_tensors,
)

CONFIG_FILE = "config.json"
# Bytes asked for first: the header's length and, in most files, the whole header. huggingface_hub asks for as much,
# having found 97 % of the headers of the Hub's most used models shorter.
FIRST_READ = 100_000
ASSETS_LIBRARY = "optimum-ipu-ext"
HEADERS_FOLDER = "safetensors-headers"

logger = logging.getLogger(__name__)
T = TypeVar("T")
Tensors = Dict[str, TensorHeader]


class HubModel(NamedTuple):
    """A model of the Hub at one commit, as a placement needs it.

    Attributes:
        config: its `config.json`.
        tensors: `{tensor name: TensorHeader}` of its safetensors checkpoint (one file, or the files of its index), in
            the file's or the index's order; `None` when it has no safetensors checkpoint.
        commit: the commit the revision resolved to.
    """

    config: Dict[str, Any]
    tensors: Optional[Tensors]
    commit: str


def hub_model(repo_id: str, revision: Optional[str] = None, token: Union[str, bool, None] = None) -> HubModel:
    """The `config.json` and the checkpoint's tensors of the Hub model `repo_id` at `revision` (default: `main`).

    `token`: a token, `False` for none, `None` for the stored one (or `HF_TOKEN`).

    Raises:
        HubError: the repository does not exist or cannot be read with this token (`HubRepositoryNotFoundError`), is
            gated (`HubAccessDeniedError`), has no such revision (`HubRevisionNotFoundError`) or no `config.json` or
            a shard its index names (`HubFileNotFoundError`); the Hub is down, failing or switched off (offline) and
            the cache holds no copy (`HubUnavailableError`).
        ModelFileError: `config.json` or the index is not the JSON it should be, or a safetensors header is
            truncated or malformed, naming the file; `repo_id` is not a repository id.
    """
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ModelFileError(repo_id, f"not a Hub repository id ({error})") from error
    source = HubSource(repo_id, CONFIG_FILE, {"revision": revision, "token": token})
    with load_errors(source):
        path = load_promptly(source, functools.partial(_download, source, source.revision))
    commit = _snapshot_commit(path)
    config = parse_config(_read(path), _name(source, CONFIG_FILE))
    found, tensors = _cached_tensors(repo_id, commit)
    if not found:
        tensors = _read_tensors(source, commit)
        _cache_tensors(repo_id, commit, tensors)
    return HubModel(config, tensors, commit)


def _download(source: HubSource, revision: str, local_files_only: bool = False) -> str:
    """The path of the cached copy of `source`'s file at `revision`, downloaded if the cache has no current one."""
    return hf_hub_download(source.repo_id, source.filename, revision=revision, cache_dir=source.cache_dir,
                           token=source.token, local_files_only=local_files_only)


def _snapshot_commit(path: str) -> str:
    """The commit of a file `hf_hub_download` returned: the cache keeps it as `.../snapshots/<commit>/<file>`."""
    return os.path.basename(os.path.dirname(path))


def _read(path: str) -> bytes:
    with open(path, "rb") as reader:
        return reader.read()


def _name(source: HubSource, file: str) -> str:
    """How errors name a file of the repository: `hf://<repo>@<revision>/<file>`, as huggingface_hub's file system."""
    return f"hf://{source.repo_id}@{quote(source.revision, safe='')}/{file}"


# The checkpoint, read from the Hub

def _read_tensors(source: HubSource, commit: str) -> Optional[Tensors]:
    """The tensors of the safetensors checkpoint of `source`'s repository at `commit`: `model.safetensors`, else the
    files of `model.safetensors.index.json`; `None` when it has neither."""
    single = _file_header(source, commit, SINGLE_FILE)
    if single is not None:
        return single
    index_source = HubSource(source.repo_id, INDEX_FILE, {"revision": source.revision, "token": source.token},
                             named_by_user=False)
    with load_errors(index_source):
        index = _unless_missing(lambda: _download(index_source, commit))
    if index is None:
        return None
    return sharded_tensors(parse_index(_read(index), _name(source, INDEX_FILE)), _name(source, INDEX_FILE),
                           functools.partial(_shard_header, source, commit))


def _shard_header(source: HubSource, commit: str, file: str) -> Tensors:
    tensors = _file_header(source, commit, file)
    if tensors is None:
        problem = f"the repository has no file '{file}' at this revision, which {INDEX_FILE} names"
        raise HubFileNotFoundError(source.repo_id, problem, _header_action(file), source.revision)
    return tensors


def _header_action(file: str) -> str:
    return f"read the safetensors header of '{file}' from"


def _file_header(source: HubSource, commit: str, file: str) -> Optional[Tensors]:
    """The tensors of the safetensors file `file` at `commit`, read by range requests, or `None` when the repository
    has no such file."""
    url = hf_hub_url(source.repo_id, file, revision=commit)
    headers = build_hf_headers(token=source.token)
    name = _name(source, file)
    with hub_errors(source.repo_id, _header_action(file), source.revision, source.token_given, writing=False):
        start = _unless_missing(lambda: _header_bytes(url, headers, name))
    return None if start is None else parse_header(*start, name)


def _header_bytes(url: str, headers: Dict[str, str], name: str) -> Tuple[bytes, int]:
    """The first bytes of the safetensors file at `url` (its header's length and its header, as far as the file
    holds them) and the size of the file, in one range request, or two for a header longer than `FIRST_READ`."""
    data, size = _byte_range(url, headers, 0, FIRST_READ - 1)
    end = min(8 + header_length(data, name), size)
    if len(data) < end:
        data += _byte_range(url, headers, len(data), end - 1)[0]
    return data, size


def _byte_range(url: str, headers: Dict[str, str], first: int, last: int) -> Tuple[bytes, int]:
    """Bytes `first` to `last` of the file at `url` (fewer where it ends) and the size of the file."""
    response = get_session().get(url, headers=dict(headers, Range=f"bytes={first}-{last}"),
                                 timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT)
    if response.status_code == 416 and first == 0:  # Range Not Satisfiable: not even a first byte
        return b"", 0
    hf_raise_for_status(response)
    if response.status_code == 206:  # Partial Content, `Content-Range: bytes first-last/size`
        return response.content, int(response.headers["Content-Range"].rpartition("/")[2])
    # 200: a server or proxy that ignores `Range` sent the whole file
    return response.content[first:last + 1], len(response.content)


def _unless_missing(read: Callable[[], T]) -> Optional[T]:
    """`read()`, or `None` when the Hub answers that the file does not exist at this revision."""
    try:
        return read()
    except EntryNotFoundError as error:
        if isinstance(error, LocalEntryNotFoundError):  # not in the cache, and the Hub not asked: no answer
            raise
        return None


# The cache of the headers

def _cache_file(repo_id: str, commit: str) -> str:
    folder = cached_assets_path(ASSETS_LIBRARY, namespace=repo_id, subfolder=HEADERS_FOLDER,
                                assets_dir=constants.HF_ASSETS_CACHE)
    return os.path.join(folder, f"{commit}.json")


def _cached_tensors(repo_id: str, commit: str) -> Tuple[bool, Optional[Tensors]]:
    """(whether the cache holds the tensors of `repo_id` at `commit`, the tensors). A cache file that cannot be read
    as one (a disk error, an edit) counts as none: the headers are read again and the file replaced."""
    try:
        with open(_cache_file(repo_id, commit), encoding="utf-8") as reader:
            tensors = json.load(reader)["tensors"]
        if tensors is None:
            return True, None
        return True, {name: TensorHeader(dtype, tuple(shape)) for name, (dtype, shape) in tensors.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False, None


def _cache_tensors(repo_id: str, commit: str, tensors: Optional[Tensors]) -> None:
    """Caches the tensors of `repo_id` at `commit`; a cache that cannot be written is only a missed saving."""
    try:
        write_text_atomically(_cache_file(repo_id, commit), json.dumps({"tensors": tensors}))
    except (OSError, ValueError) as error:  # ValueError: huggingface_hub cannot make the folder (a file in the way)
        logger.warning(f"The safetensors headers of '{repo_id}' at {commit} are not cached: {error}")
