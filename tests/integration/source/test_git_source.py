"""The git source against real bare remotes: clone, polls, fetches, checkouts and failures."""

from __future__ import annotations

import base64
import http.server
import socket
import stat
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncer.cli import cli
from syncer.config import GitCredentials
from syncer.errors import HistoryRewritten, SourceError
from syncer.source import GitSource, SourceOptions
from tests.integration.verify.kit import GitRepo, bare_remote, run

pytestmark = pytest.mark.integration


class Remote:
    def __init__(self, root: Path) -> None:
        self.bare = bare_remote(root / "remote.git")
        self.work = GitRepo(root / "work")
        self.work.git("remote", "add", "origin", str(self.bare))

    def push(self, message: str, files: dict[str, str] | None = None) -> str:
        sha = self.work.commit(message, files)
        self.work.git("push", "-q", "--force", "origin", "HEAD:main")
        return sha

    def source(self, cache: Path, **options: object) -> GitSource:
        return GitSource(SourceOptions(url=str(self.bare), cache_dir=cache, **options))  # type: ignore[arg-type]


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    r = Remote(tmp_path)
    r.push("initial", {"clusters/a/redis.yaml": "replicas: 1\n"})
    return r


def _fetch_head_state(source: GitSource) -> tuple[int, tuple[str, ...]]:
    fetch_head = source.git_dir / "FETCH_HEAD"
    packs = tuple(sorted(p.name for p in (source.git_dir / "objects" / "pack").iterdir()))
    return (fetch_head.stat().st_mtime_ns if fetch_head.exists() else 0), packs


def test_first_poll_clones_a_local_remote_whole_without_a_promisor(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    result = source.poll()
    assert (result.changed, result.fetched, result.previous) == (True, True, "")
    assert result.tip == remote.work.git("rev-parse", "HEAD")
    assert source.fetch_count == 1
    config = run(["git", "config", "--list", "--local"], env=remote.work.env, cwd=source.git_dir)
    assert "promisor" not in config
    assert "partialclonefilter" not in config
    assert not (source.git_dir / "objects" / "info" / "alternates").exists()


def test_no_change_poll_does_not_fetch(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    first = source.poll()
    before = _fetch_head_state(source)
    second = source.poll()
    assert second == type(second)(tip=first.tip, changed=False, fetched=False, previous=first.tip)
    assert source.fetch_count == 1
    assert _fetch_head_state(source) == before


def test_new_commit_is_fetched_incrementally(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    first = source.poll()
    inode = source.git_dir.stat().st_ino
    new = remote.push("second", {"clusters/b/redis.yaml": "replicas: 2\n"})
    result = source.poll()
    assert (result.tip, result.changed, result.fetched, result.previous) == (new, True, True, first.tip)
    assert source.fetch_count == 2
    assert source.git_dir.stat().st_ino == inode
    assert source.poll().fetched is False


def test_unreachable_remote_keeps_last_good_revision(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    good = source.checkout(source.poll().tip)
    source.mark_synced(good.revision)
    remote.bare.rename(tmp_path / "moved.git")
    with pytest.raises(
        SourceError, match=r"ls-remote \(.*remote\.git\) failed: .*does not appear to be a git repository"
    ):
        source.poll()
    assert source.last_synced == good.revision
    again = source.checkout(good.revision)
    assert again.tree_path == good.tree_path
    assert (again.tree_path / "clusters/a/redis.yaml").read_text() == "replicas: 1\n"


def test_unreachable_remote_on_first_poll(tmp_path: Path) -> None:
    source = GitSource(SourceOptions(url=str(tmp_path / "nowhere.git"), cache_dir=tmp_path / "cache"))
    with pytest.raises(SourceError, match=r"nowhere\.git"):
        source.poll()
    assert source.fetch_count == 0


def test_deleted_branch(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    source.poll()
    run(["git", "update-ref", "-d", "refs/heads/main"], env=remote.work.env, cwd=remote.bare)
    with pytest.raises(SourceError, match=r"^branch 'main' does not exist on .*remote\.git$"):
        source.poll()


def _rewrite(remote: Remote) -> tuple[str, str]:
    old = remote.work.git("rev-parse", "HEAD")
    remote.work.git("commit", "-q", "--amend", "-m", "rewritten initial")
    remote.work.git("push", "-q", "--force", "origin", "HEAD:main")
    return old, remote.work.git("rev-parse", "HEAD")


def test_history_rewrite_is_refused_and_stays_refused(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    source.mark_synced(source.poll().tip)
    old, new = _rewrite(remote)
    for _ in range(2):
        with pytest.raises(HistoryRewritten) as raised:
            source.poll()
        assert f"the new tip {new} does not descend from the last synced revision {old}" in str(raised.value)
    assert source.last_accepted == old
    assert source.checkout(old).revision == old


def test_history_rewrite_is_accepted_when_the_policy_allows(remote: Remote, tmp_path: Path) -> None:
    remote.source(tmp_path / "cache").poll()
    old, new = _rewrite(remote)
    source = remote.source(tmp_path / "cache", allow_history_rewrite=True)
    result = source.poll()
    assert (result.tip, result.previous, result.rewritten, result.changed) == (new, old, True, True)


def test_checkouts_are_exact_isolated_and_read_only(remote: Remote, tmp_path: Path) -> None:
    source = remote.source(tmp_path / "cache")
    first = source.checkout(source.poll().tip)
    remote.push("change", {"clusters/a/redis.yaml": "replicas: 3\n", "clusters/c/redis.yaml": "x\n"})
    second = source.checkout(source.poll().tip)
    assert first.tree_path != second.tree_path
    assert (first.tree_path / "clusters/a/redis.yaml").read_text() == "replicas: 1\n"
    assert not (first.tree_path / "clusters/c").exists()
    assert (second.tree_path / "clusters/a/redis.yaml").read_text() == "replicas: 3\n"
    for path in [second.tree_path, second.tree_path / "clusters/a/redis.yaml"]:
        assert path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) == 0
    head = run(["git", "rev-parse", "HEAD"], env=remote.work.env, cwd=first.tree_path).strip()
    assert head == first.revision
    source.remove_checkout(first.revision)
    assert not first.tree_path.exists()
    assert (second.tree_path / "clusters/c/redis.yaml").exists()


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []  # noqa: RUF012

    def do_GET(self) -> None:
        _Recorder.seen.append(self.headers.get("Authorization", ""))
        body = f"internal error; you sent {self.headers.get('Authorization', '')}\n".encode()
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def http_remote() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/fleet.git"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_token_never_appears_in_errors(
    http_remote: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tok-3f9a1c77e2b54d0c"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    for name, value in {
        "GIT_TRACE_CURL": "1",
        "GIT_TRACE_REDACT": "0",
        "GIT_CURL_VERBOSE": "1",
        "GIT_TRACE": "1",
    }.items():
        monkeypatch.setenv(name, value)
    url = http_remote.replace("http://", f"http://fleet:{token}@")
    creds = GitCredentials(token_file=token_file)
    source = GitSource(SourceOptions(url=url, cache_dir=tmp_path / "cache", credentials=creds, timeout=20))
    with pytest.raises(SourceError) as raised:
        source.poll()
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert f"Basic {basic}" in _Recorder.seen, "the token must reach the server through the header"
    text = "".join(traceback.format_exception(raised.value)) + repr(raised.value)
    assert "500" in str(raised.value)
    assert token not in text
    assert basic not in text


def test_a_silent_remote_hits_the_deadline(tmp_path: Path) -> None:
    """A server that accepts connections and never answers: the poll fails at the deadline."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/fleet.git"
        source = GitSource(SourceOptions(url=url, cache_dir=tmp_path / "cache", timeout=1.0))
        with pytest.raises(
            SourceError,
            match=r"^ls-remote \(http://127\.0\.0\.1:\d+/fleet\.git\) failed: no answer within 1s$",
        ):
            source.poll()


TRACE_VARIABLES = (
    "GIT_TRACE",
    "GIT_TRACE2",
    "GIT_TRACE2_EVENT",
    "GIT_TRACE2_PERF",
    "GIT_TRACE_CURL",
    "GIT_TRACE_PACKET",
    "GIT_TRACE_SETUP",
    "GIT_TRACE_PERFORMANCE",
    "GIT_TRACE_PACK_ACCESS",
    "GIT_TRACE_PACKFILE",
    "GIT_TRACE_SHALLOW",
    "SSLKEYLOGFILE",
)
PASSWORD = "p@ss:w0rd!"
GITHUB_TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ"
QUERY_TOKEN = "tok-9f8e7d6c5b4a3210"
URL_SHAPES = {
    "raw-password-with-at-and-colon": ("http://fleet:{p}@{host}/fleet.git", (PASSWORD, "ss:w0rd")),
    "encoded-password": ("http://fleet:p%40ss%3Aw0rd%21@{host}/fleet.git", (PASSWORD, "p%40ss%3Aw0rd%21")),
    "token-as-user": ("http://{t}@{host}/fleet.git", (GITHUB_TOKEN,)),
    "token-in-path": ("http://{host}/org/{t}/fleet.git", (GITHUB_TOKEN,)),
    "token-in-query": ("http://{host}/fleet.git?access_token={q}", (QUERY_TOKEN,)),
}


# git takes the host of a raw ``user:p@ss@host`` URL to be ``ss@host``: that one never reaches the server.
REACHABLE = set(URL_SHAPES) - {"raw-password-with-at-and-colon"}


@pytest.mark.parametrize("shape", sorted(URL_SHAPES))
def test_credentials_never_leak_whatever_the_url_shape_or_tracing_variables(
    shape: str, http_remote: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template, secrets = URL_SHAPES[shape]
    host = http_remote.removeprefix("http://").split("/", 1)[0]
    url = template.format(p=PASSWORD, host=host, t=GITHUB_TOKEN, q=QUERY_TOKEN)
    token = "tok-file-55aa11bb22cc"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in TRACE_VARIABLES:
        monkeypatch.setenv(name, str(traces / name))
    monkeypatch.setenv("GIT_TRACE_REDACT", "0")
    monkeypatch.setenv("GIT_CURL_VERBOSE", "1")
    monkeypatch.setenv("GIT_TRACE2_CONFIG_PARAMS", "http.extraHeader,http.extraheader")
    monkeypatch.setenv("GIT_TRACE2_ENV_VARS", "GIT_CONFIG_VALUE_0,GIT_CONFIG_VALUE_1,GIT_CONFIG_VALUE_2")
    creds = GitCredentials(token_file=token_file)
    source = GitSource(SourceOptions(url=url, cache_dir=tmp_path / "cache", credentials=creds, timeout=20))
    with pytest.raises(SourceError) as raised:
        source.poll()
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    text = "".join(traceback.format_exception(raised.value)) + repr(raised.value)
    assert str(raised.value).startswith("ls-remote (http://")
    if shape in REACHABLE:
        assert f"Basic {basic}" in _Recorder.seen, "the token must reach the server through the header"
        assert "500" in str(raised.value)
    for secret in (*secrets, token, basic):
        assert secret not in text, secret
    assert sorted(p.name for p in traces.iterdir()) == [], "no trace may be written"

    code_and_out = CliRunner().invoke(cli, ["render", "--repo", url], catch_exceptions=False)
    assert code_and_out.exit_code == 2
    for secret in secrets:
        assert secret not in code_and_out.output, secret
    assert sorted(p.name for p in traces.iterdir()) == []


def test_a_fifo_put_as_the_token_file_after_start_fails_the_poll_at_once_and_the_next_poll_works(
    remote: Remote, tmp_path: Path
) -> None:
    import os

    token_file = tmp_path / "token"
    token_file.write_text("tok-1\n")
    source = remote.source(tmp_path / "cache", credentials=GitCredentials(token_file=token_file))
    first = source.poll().tip
    token_file.unlink()
    os.mkfifo(token_file)
    said: list[BaseException] = []

    def poll() -> None:
        try:
            source.poll()
        except SourceError as err:
            said.append(err)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # let the blocked reader go before failing
        os.close(os.open(token_file, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the poll hung on a FIFO put as the token file")
    assert said, "the poll must fail saying why"
    assert str(token_file) in str(said[0])
    assert "not a regular file (a FIFO)" in str(said[0])
    token_file.unlink()
    token_file.write_text("tok-2\n")
    second = remote.push("next")
    assert source.poll().tip == second != first
