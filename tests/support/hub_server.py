"""A small, in-memory stand-in for the Hugging Face Hub, for tests.

It speaks the subset of the Hub HTTP API that the real `huggingface_hub` client (0.36 and 2.x) uses to push and
load a configuration, so tests exercise the client itself rather than a mock of it:

- `create_repo` (public or private, `exist_ok` through the 409 answer), `whoami`;
- `create_commit` / `upload_file` / `push_to_hub`: `preupload` then an NDJSON `commit` with inline base64 files,
  commit message, `parentCommit`, commits to a branch, `create_pr` (a `refs/pr/N` ref and a `pullRequestUrl`),
  the `validate-yaml` call made whenever a README.md is committed;
- `create_branch`, `create_tag`, `update_repo_settings` (the repository's visibility);
- `model_info` / `repo_info` and `hf_hub_download` (`HEAD` then `GET` on `/resolve/`, with the `X-Repo-Commit`
  and quoted `ETag` headers), by branch, tag, PR ref or full commit sha, files in subfolders;
- range requests on `/resolve/`, as `get_safetensors_metadata` and a resumed download send them (`Range:
  bytes=first-last` or `bytes=first-`): `206` with `Content-Range: bytes first-last/size`, or `416` with
  `Content-Range: bytes */size` when the file is shorter than `first`. Another `Range` (a suffix, several ranges)
  is ignored and the whole file served, as HTTP allows. Files may be binary (safetensors checkpoints);
- the client's typed errors, which it derives from `X-Error-Code`: `RepoNotFound` (404, or 401 for a private repo
  read without a valid token), `RevisionNotFound`, `EntryNotFound`; 401 for an unknown token, 403 for a read-only
  token that writes.

Gated repositories (`gate`): anyone reads their info, but downloading a file needs a token the gate lets through,
as on the Hub: without a token the answer is 401, with another token 403, both with `X-Error-Code: GatedRepo`.
`bare_404_next` answers with a 404 that carries no `X-Error-Code` and no `X-Error-Message` (an HTML page, as a proxy
or a partial mirror answers).

Files are always committed inline ("regular" upload mode, no LFS). Repositories are model repos named
`namespace/name`. Tests can seed and inspect repos directly, read a request log, per-file download counts and the
bytes of each file served, and inject faults (an HTTP status, a connection cut mid-body, a stalled answer, a range
ignored, or a stopped server) and disarm them.
"""
import base64
import collections
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

WRITE_TOKEN = "hf_test_write_token"
READ_TOKEN = "hf_test_read_token"
USER = "hub-tester"
TOKEN_ROLES = {WRITE_TOKEN: "write", READ_TOKEN: "read"}
INITIAL_FILES = {".gitattributes": b"*.bin filter=lfs diff=lfs merge=lfs -text\n"}
BYTE_RANGE = re.compile(r"bytes=(\d+)-(\d*)")

LoggedRequest = collections.namedtuple("LoggedRequest", "method path status query")
Commit = collections.namedtuple("Commit", "sha parent message files")


class HubError(Exception):
    """An error answer: HTTP status, message, and the `X-Error-Code` the client maps to a typed error."""

    def __init__(self, status, message, code=None, headers=None, body=None):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}
        self.body = dict(body or {}, error=message)


def git_blob_sha(content):
    """The git blob sha1 of `content`, which the Hub uses as ETag and `oid` of a regular file."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


class _Repo:
    def __init__(self, repo_id, private):
        self.repo_id, self.private = repo_id, private
        self.commits = {}  # sha -> Commit
        self.refs = {}  # "refs/heads/main", "refs/tags/v1", "refs/pr/1" -> sha

    def resolve(self, revision):
        """Commit sha of a branch, tag, `refs/...` name or full sha, else a `RevisionNotFound` error."""
        if revision in self.commits:
            return revision
        for ref in ("refs/heads/" + revision, "refs/tags/" + revision, revision):
            if ref in self.refs:
                return self.refs[ref]
        raise HubError(404, "Invalid rev id: %s" % revision, "RevisionNotFound")

    def branch_ref(self, revision):
        """The ref a commit to `revision` moves: an existing branch or PR ref."""
        for ref in ("refs/heads/" + revision, revision):
            if ref in self.refs and not ref.startswith("refs/tags/"):
                return ref
        raise HubError(404, "Invalid rev id: %s" % revision, "RevisionNotFound")


class HubServer:
    """The server and its state. Seeding and inspection methods are safe to call from the test thread."""

    def __init__(self, host="127.0.0.1", port=0):
        self.write_token, self.read_token, self.user = WRITE_TOKEN, READ_TOKEN, USER
        self._lock = threading.RLock()
        self._repos = {}
        self._log = []
        self._downloads = collections.Counter()
        self._bytes_served = collections.Counter()
        self._faults = []
        self._gates = {}  # repo_id -> tokens let through
        self._commit_counter = 0
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.hub = self
        self.url = "http://%s:%d" % self._httpd.server_address[:2]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def stop(self):
        """Stop serving and close the socket: the port then refuses connections."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join()
            self._thread = None

    # Seeding and inspection
    def create_repo(self, repo_id, private=False):
        with self._lock:
            if repo_id in self._repos:
                raise HubError(409, "You already created this model repo: %s" % repo_id)
            repo = self._repos[repo_id] = _Repo(repo_id, bool(private))
            sha = self._new_commit(repo, None, "initial commit", dict(INITIAL_FILES))
            repo.refs["refs/heads/main"] = sha

    def commit(self, repo_id, files, branch="main", message="Seed commit"):
        """Commit `files` ({path: str or bytes}) on `branch` (or `refs/pr/N`); returns the commit sha."""
        with self._lock:
            repo = self._repos[repo_id]
            ref = repo.branch_ref(branch)
            content = dict(repo.commits[repo.refs[ref]].files)
            content.update({p: c.encode() if isinstance(c, str) else c for p, c in files.items()})
            repo.refs[ref] = self._new_commit(repo, repo.refs[ref], message, content)
            return repo.refs[ref]

    def create_branch(self, repo_id, branch, revision="main"):
        self._add_ref(repo_id, "refs/heads/" + branch, revision)

    def create_tag(self, repo_id, tag, revision="main"):
        self._add_ref(repo_id, "refs/tags/" + tag, revision)

    def files(self, repo_id, revision="main"):
        """{path: bytes} of the repo at `revision` (branch, tag, `refs/pr/N` or sha)."""
        with self._lock:
            repo = self._repos[repo_id]
            return dict(repo.commits[repo.resolve(revision)].files)

    def commit_messages(self, repo_id, revision="main"):
        """Commit summaries reachable from `revision`, newest first."""
        with self._lock:
            repo = self._repos[repo_id]
            sha, messages = repo.resolve(revision), []
            while sha is not None:
                messages.append(repo.commits[sha].message)
                sha = repo.commits[sha].parent
            return messages

    def refs(self, repo_id):
        """{ref name: commit sha}, e.g. `refs/heads/main`, `refs/tags/v1`, `refs/pr/1`."""
        with self._lock:
            return dict(self._repos[repo_id].refs)

    def is_private(self, repo_id):
        with self._lock:
            return self._repos[repo_id].private

    def repo_exists(self, repo_id):
        with self._lock:
            return repo_id in self._repos

    @property
    def log(self):
        """Answered requests as `LoggedRequest(method, path, status, query)`; path unquoted; status 0 = cut."""
        with self._lock:
            return list(self._log)

    def downloads(self, repo_id, path):
        """How many `GET /resolve/` requests for `path` in `repo_id` were answered with the whole file."""
        with self._lock:
            return self._downloads[(repo_id, path)]

    def bytes_served(self, repo_id, path):
        """How many bytes of `path` in `repo_id` the `GET /resolve/` answers held, whole files and ranges."""
        with self._lock:
            return self._bytes_served[(repo_id, path)]

    def clear_log(self):
        """Forget the request log, the download counts and the bytes served."""
        with self._lock:
            del self._log[:]
            self._downloads.clear()
            self._bytes_served.clear()

    def gate(self, repo_id, granted_tokens=()):
        """Gate `repo_id`: its files are served only to requests with one of `granted_tokens`."""
        with self._lock:
            self._gates[repo_id] = set(granted_tokens)

    # Fault injection
    def bare_404_next(self, path_prefix, times=1, method=None):
        """Answer the next `times` requests whose unquoted path starts with `path_prefix` with a bare 404 page."""
        with self._lock:
            self._faults.append({"prefix": path_prefix, "method": method, "times": times, "bare_404": True})

    def fail_next(self, path_prefix, status=500, times=1, method=None):
        """Answer the next `times` requests whose unquoted path starts with `path_prefix` with `status`."""
        with self._lock:
            self._faults.append({"prefix": path_prefix, "method": method, "times": times, "status": status})

    def cut_next(self, path_prefix, times=1, after_bytes=4, method=None):
        """Send headers with the full Content-Length, then close after `after_bytes` of body (at once for HEAD)."""
        with self._lock:
            self._faults.append({"prefix": path_prefix, "method": method, "times": times, "cut": after_bytes})

    def stall_next(self, path_prefix, seconds, times=1, method=None):
        """Wait `seconds` before answering the next `times` requests whose unquoted path starts with `path_prefix`."""
        with self._lock:
            self._faults.append({"prefix": path_prefix, "method": method, "times": times, "stall": seconds})

    def ignore_range_next(self, path_prefix, times=1):
        """Answer the next `times` range requests whose unquoted path starts with `path_prefix` with the whole file
        (200), as a proxy that ignores `Range` does."""
        with self._lock:
            self._faults.append({"prefix": path_prefix, "method": "GET", "times": times, "ignore_range": True})

    def clear_faults(self):
        """Disarm every fault not yet used up."""
        with self._lock:
            del self._faults[:]

    # Internals, called with the lock held
    def _take_fault(self, method, path):
        for fault in self._faults:
            if path.startswith(fault["prefix"]) and fault["method"] in (None, method):
                fault["times"] -= 1
                if fault["times"] <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def _new_commit(self, repo, parent, message, files):
        self._commit_counter += 1
        blobs = sorted((p, git_blob_sha(c)) for p, c in files.items())
        key = json.dumps([repo.repo_id, parent, message, blobs, self._commit_counter]).encode()
        sha = hashlib.sha1(key).hexdigest()
        repo.commits[sha] = Commit(sha, parent, message, files)
        return sha

    def _add_ref(self, repo_id, ref, revision):
        with self._lock:
            repo = self._repos[repo_id]
            if ref in repo.refs:
                raise HubError(409, "Reference already exists: %s" % ref)
            repo.refs[ref] = repo.resolve(revision)


class _Handler(BaseHTTPRequestHandler):
    """Routes one request to the `_api_*` / `_resolve` methods; they return (status, JSON body) or raise HubError."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._dispatch()

    do_HEAD = do_POST = do_PUT = do_GET

    def _dispatch(self):
        hub = self.server.hub
        url = urlsplit(self.path)
        self.segments = [unquote(s) for s in url.path.split("/")[1:]]
        self.query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.unquoted_path = "/" + "/".join(self.segments)
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        with hub._lock:
            fault = hub._take_fault(self.command, self.unquoted_path)
        self.cut_after = fault.get("cut") if fault else None
        self.ignore_range = bool(fault and fault.get("ignore_range"))
        if fault and "stall" in fault:
            time.sleep(fault["stall"])
        if fault and fault.get("bare_404"):
            self._send(404, b"<html><body>404 Not Found</body></html>", {"Content-Type": "text/html"})
            return
        try:
            if fault and "status" in fault:
                raise HubError(fault["status"], "Injected failure")
            with hub._lock:
                status, payload, headers = self._route(hub)
            body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self._send(status, body, headers)
        except HubError as e:
            headers = dict(e.headers, **{"X-Error-Message": e.message})
            if e.code:
                headers["X-Error-Code"] = e.code
            self._send(e.status, json.dumps(e.body).encode(), headers)

    def _send(self, status, body, headers):
        hub = self.server.hub
        cut = self.cut_after is not None
        with hub._lock:  # logged before answering, so the test thread sees it once the client returns
            hub._log.append(LoggedRequest(self.command, self.unquoted_path, 0 if cut else status, self.query))
        if cut and self.command == "HEAD":
            return
        try:
            self.send_response(status)
            headers.setdefault("Content-Type", "application/json")
            for name, value in dict(headers, **{"Content-Length": str(len(body))}).items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body[: self.cut_after] if cut else body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (a stalled answer)
            pass

    def _route(self, hub):
        seg, method = self.segments, self.command
        if seg == ["api", "whoami-v2"] and method == "GET":
            role = self._role()
            if role is None:
                raise HubError(401, "Invalid credentials in Authorization header")
            auth = {"type": "access_token", "accessToken": {"displayName": role, "role": role}}
            return 200, {"type": "user", "name": USER, "orgs": [], "auth": auth}, {}
        if seg == ["api", "repos", "create"] and method == "POST":
            return self._api_create_repo(hub, json.loads(self.body))
        if seg == ["api", "validate-yaml"] and method == "POST":
            return 200, {"errors": [], "warnings": []}, {}
        if seg[:2] == ["api", "models"] and len(seg) >= 4:
            return self._api_models(hub, "/".join(seg[2:4]), seg[4:], method)
        if len(seg) >= 5 and seg[2] == "resolve" and method in ("GET", "HEAD"):
            return self._resolve(hub, "/".join(seg[:2]), seg[3], "/".join(seg[4:]))
        raise HubError(404, "Not found: %s %s" % (method, self.unquoted_path))

    def _role(self):
        """'write', 'read' or None (anonymous); an unknown token is a 401, as on the Hub."""
        auth = self.headers.get("Authorization")
        if not auth:
            return None
        role = TOKEN_ROLES.get(auth[len("Bearer "):] if auth.startswith("Bearer ") else auth)
        if role is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        return role

    def _readable_repo(self, hub, repo_id):
        role = self._role()
        repo = hub._repos.get(repo_id)
        if repo is None or (repo.private and role is None):
            status = 401 if repo is not None else 404
            raise HubError(status, "Repository not found", "RepoNotFound")
        return repo

    def _pass_gate(self, hub, repo_id):
        """Refuse a gated repository's files to a request without a token the gate lets through."""
        if repo_id not in hub._gates:
            return
        role = self._role()
        token = self.headers.get("Authorization", "")[len("Bearer "):]
        if role is None:
            message = "Access to model %s is restricted. You must have access to it and be authenticated to access " \
                      "it. Please log in." % repo_id
            raise HubError(401, message, "GatedRepo")
        if token not in hub._gates[repo_id]:
            message = "Access to model %s is restricted and you are not in the authorized list. Visit %s/%s to ask " \
                      "for access." % (repo_id, hub.url, repo_id)
            raise HubError(403, message, "GatedRepo")

    def _writable_repo(self, hub, repo_id):
        repo = self._readable_repo(hub, repo_id)
        self._require_write()
        return repo

    def _require_write(self):
        role = self._role()
        if role is None:
            raise HubError(401, "You must be authenticated to write")
        if role != "write":
            raise HubError(403, "You don't have the rights to write with a read-only token")

    def _api_create_repo(self, hub, payload):
        self._require_write()
        repo_id = "%s/%s" % (payload.get("organization") or USER, payload["name"])
        private = payload.get("private", payload.get("visibility") == "private")
        answer = {"url": "%s/%s" % (hub.url, repo_id), "name": repo_id, "id": repo_id}
        if hub.repo_exists(repo_id):  # the Hub's 409 also carries the url, which `exist_ok=True` relies on
            raise HubError(409, "You already created this model repo", body=answer)
        hub.create_repo(repo_id, private=bool(private))
        return 200, answer, {}

    def _api_models(self, hub, repo_id, rest, method):
        if method == "GET" and (rest == [] or rest[:1] == ["revision"] and len(rest) == 2):
            repo = self._readable_repo(hub, repo_id)
            sha = repo.resolve(rest[1] if rest else "main")
            files = repo.commits[sha].files
            siblings = [{"rfilename": p, "size": len(c), "blobId": git_blob_sha(c)} for p, c in sorted(files.items())]
            gated = "manual" if repo_id in hub._gates else False
            info = {"id": repo_id, "modelId": repo_id, "author": repo_id.split("/")[0], "sha": sha,
                    "private": repo.private, "disabled": False, "gated": gated, "tags": [], "siblings": siblings}
            return 200, info, {}
        if method == "PUT" and rest == ["settings"]:  # `update_repo_settings`: 0.x sends `private`, 2.x `visibility`
            repo = self._writable_repo(hub, repo_id)
            payload = json.loads(self.body)
            with hub._lock:
                if "private" in payload:
                    repo.private = bool(payload["private"])
                if "visibility" in payload:
                    repo.private = payload["visibility"] == "private"
            return 200, {}, {}
        if method == "POST" and len(rest) == 2:
            repo = self._writable_repo(hub, repo_id)
            action, name = rest
            payload = json.loads(self.body) if action != "commit" and self.body else {}
            if action == "preupload":
                files = repo.commits[repo.resolve(name)].files
                answers = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                            "oid": git_blob_sha(files[f["path"]]) if f["path"] in files else None}
                           for f in payload["files"]]
                return 200, {"files": answers}, {}
            if action == "commit":
                return self._api_commit(hub, repo, name)
            if action == "branch":
                hub.create_branch(repo_id, name, payload.get("startingPoint", "main"))
                return 200, {}, {}
            if action == "tag":
                hub.create_tag(repo_id, payload["tag"], name)
                return 200, {}, {}
        raise HubError(404, "Not found: %s %s" % (method, self.unquoted_path))

    def _api_commit(self, hub, repo, revision):
        lines = [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        parent_commit = header.get("parentCommit")
        if self.query.get("create_pr") in ("1", "true"):
            parent = parent_commit or repo.resolve(revision)
            number = 1 + sum(ref.startswith("refs/pr/") for ref in repo.refs)
            ref = "refs/pr/%d" % number
        else:
            ref = repo.branch_ref(revision)
            parent = repo.refs[ref]
            if parent_commit and parent_commit != parent:
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(repo.commits[parent].files)
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                if files.pop(value["path"], None) is None:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
            elif key == "deletedFolder":
                files = {p: c for p, c in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
            elif key != "header":
                raise HubError(400, "The test hub only accepts inline files, not %r" % key)
        sha = hub._new_commit(repo, parent, header["summary"], files)
        repo.refs[ref] = sha
        answer = {"success": True, "commitOid": sha, "commitUrl": "%s/%s/commit/%s" % (hub.url, repo.repo_id, sha)}
        if ref.startswith("refs/pr/"):
            answer["pullRequestUrl"] = "%s/%s/discussions/%s" % (hub.url, repo.repo_id, ref.split("/")[-1])
        return 200, answer, {}

    def _resolve(self, hub, repo_id, revision, path):
        repo = self._readable_repo(hub, repo_id)
        self._pass_gate(hub, repo_id)
        sha = repo.resolve(revision)
        content = repo.commits[sha].files.get(path)
        if content is None:
            raise HubError(404, "Entry not found", "EntryNotFound", {"X-Repo-Commit": sha})
        headers = {"X-Repo-Commit": sha, "ETag": '"%s"' % git_blob_sha(content),
                   "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        if self.command == "HEAD":
            return 200, content, headers
        status, content = self._requested_part(content, headers)
        hub._downloads[(repo_id, path)] += status == 200
        hub._bytes_served[(repo_id, path)] += len(content)
        return status, content, headers

    def _requested_part(self, content, headers):
        """(status, body) of a `GET` of `content`: the byte range its `Range` header asks for (206, and sets
        `Content-Range` in `headers`), else the whole file (200). Raises a 416 for a range after the end."""
        match = BYTE_RANGE.fullmatch(self.headers.get("Range", "").strip())
        if match is None or self.ignore_range:
            return 200, content
        first, last = int(match.group(1)), int(match.group(2) or len(content) - 1)
        if first >= len(content):
            headers["Content-Range"] = "bytes */%d" % len(content)
            raise HubError(416, "Range Not Satisfiable", headers=headers)
        if last < first:
            return 200, content
        last = min(last, len(content) - 1)
        headers["Content-Range"] = "bytes %d-%d/%d" % (first, last, len(content))
        return 206, content[first:last + 1]
