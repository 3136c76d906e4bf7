"""`push_to_hub`: reads the repository first (its visibility, its head commit, its `README.md`), then commits the
config and its model card together on top of that head; never widens who can see the repository."""

import logging
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

from huggingface_hub import (
    CommitInfo,
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    constants,
    hf_hub_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from ..errors import (
    HubError,
    HubVisibilityError,
)
from .card import CARD_NAME, PICTURE_NAME, CardAttachment, card_text
from .compat import with_token_keyword
from .failures import push_errors

logger = logging.getLogger(__name__)


class PushOutcome(NamedTuple):
    """What a push did: the client's `CommitInfo`, and whether it changed anything (a commit or a pull request)."""

    commit: CommitInfo
    changed: bool


def push_config(config: Any, repo_id: str, kwargs: Dict[str, Any],
                attachment: Optional[CardAttachment] = None) -> PushOutcome:
    """Commits `config` and its model card to `repo_id`; `kwargs` are `IPUConfig.push_to_hub`'s; `attachment`, what
    the card's section shows besides the config (a placement's picture and table) and the files it refers to.

    The repository is read first: a `private=True` push to a public repository stops there, before anything is
    created or uploaded. The config, the card and the attachment's files are committed together, on top of the
    commit whose card was read (`parent_commit`), so that a card edited in between is never overwritten. A push
    without a picture deletes the one an earlier push committed (`PICTURE_NAME`): the section no longer shows it.
    """
    kwargs = with_token_keyword(kwargs, "token")
    with push_errors(repo_id, kwargs):
        return _push(config, repo_id, attachment=attachment, **kwargs)


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
    attachment: Optional[CardAttachment] = None,
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
        card = card_text(config, repo_id, _read_card(repo_id, info, token), tags,
                         attachment.markdown if attachment else "")
    except ValueError as error:
        raise HubError(repo_id, str(error), "push the IPU config to") from error
    operations: List[Any] = [
        CommitOperationAdd(config.CONFIG_NAME, config.to_json_string().encode("utf-8")),
        CommitOperationAdd(CARD_NAME, card.encode("utf-8")),
        *(CommitOperationAdd(path, content) for path, content in (attachment.files if attachment else {}).items()),
    ]
    files = attachment.files if attachment else {}
    if PICTURE_NAME not in files and info is not None and PICTURE_NAME in {s.rfilename for s in info.siblings or ()}:
        operations.append(CommitOperationDelete(PICTURE_NAME))
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
