"""Remote caches from Python: remote_status, remote_push and doctor's remotes, against a small
WebDAV-like HTTP server of the test's own (GET, HEAD, PUT, MKCOL on a temporary directory: what
kiln's HTTP backend asks of nginx)."""

import http.server
import json
import os
import pathlib
import subprocess
import threading

import pytest

import kiln


class _Handler(http.server.BaseHTTPRequestHandler):
    root = None  # pathlib.Path, set per server
    put_status = None  # an HTTP status every PUT gets instead of being stored

    def _path(self):
        return self.root / self.path.lstrip("/")

    def _answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):  # noqa: N802 (http.server's names)
        path = self._path()
        self._answer(200 if path.exists() else 404)

    def do_GET(self):  # noqa: N802
        path = self._path()
        self._answer(200, path.read_bytes()) if path.is_file() else self._answer(404)

    def do_PUT(self):  # noqa: N802
        path = self._path()
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.put_status:
            self._answer(self.put_status)
        elif not path.parent.is_dir():
            self._answer(409)  # RFC 4918: the collection must exist (kiln MKCOLs it)
        else:
            path.write_bytes(body)
            self._answer(201)

    def do_MKCOL(self):  # noqa: N802
        path = self._path()
        if path.exists():
            self._answer(405)
            return
        path.mkdir()
        self._answer(201)

    def log_message(self, *args):
        pass


def _serve(served, **behaviour):
    handler = type("Handler", (_Handler,), {"root": served, **behaviour})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def http_remote(tmp_path):
    """(url, served directory) of a server on a free loopback port, for the test's duration."""
    served = tmp_path / "served"
    served.mkdir()
    server = _serve(served)
    yield f"http://127.0.0.1:{server.server_address[1]}/kiln", served
    server.shutdown()
    server.server_close()


def test_no_remote_configured(monkeypatch):
    monkeypatch.setenv("KILN_REMOTE", "off")
    runtime = kiln.Runtime()
    status = runtime.remote_status()
    assert status == {"config_file": None, "remotes": [], "trusted_keys": [], "signing_key": None,
                      "accept_unsigned": False, "entry_lifetime_s": 90 * 86400}
    assert runtime.doctor()["remotes"] == status
    with pytest.raises(kiln.UsageError, match="no remote cache is configured"):
        runtime.remote_push("tests")


def test_malformed_configuration_is_an_error_here_and_a_report_in_doctor(monkeypatch):
    monkeypatch.setenv("KILN_REMOTE", "http://127.0.0.1:1/kiln;colour=blue")
    runtime = kiln.Runtime()
    with pytest.raises(kiln.UsageError, match="colour=blue"):
        runtime.remote_status()
    assert "colour=blue" in runtime.doctor()["remotes"]["error"]


def test_status_of_a_remote_that_is_down(monkeypatch):
    monkeypatch.setenv("KILN_REMOTE", "http://127.0.0.1:1/kiln;read-only;connect-timeout=2")
    remote = kiln.Runtime().remote_status()["remotes"]
    assert len(remote) == 1
    assert remote[0]["url"] == "http://127.0.0.1:1/kiln" and remote[0]["read_only"] is True
    assert remote[0]["state"] == "down" and "127.0.0.1" in remote[0]["detail"]


def test_push_uploads_once_then_finds_it_present(monkeypatch, http_remote, host_plugin):
    url, served = http_remote
    monkeypatch.setenv("KILN_REMOTE", url + ";read-write")  # no signing key: written only where the spec says so
    runtime = kiln.Runtime()
    status = runtime.remote_status()
    assert [(r["url"], r["read_only"], r["state"]) for r in status["remotes"]] == [(url, False, "ok")]
    assert status["remotes"][0]["detail"].startswith("HTTP ")

    published = runtime.publish("tests", "fma", host_plugin)
    pushed = runtime.remote_push("tests")
    assert len(pushed) == 1
    transfer = pushed[0]
    assert (transfer["consumer"], transfer["name"], transfer["content_key"], transfer["remote"]) == (
        "tests", "fma", published["content_key"], url)
    assert transfer["status"] == "uploaded" and transfer["bytes"] > 0
    stored = [p for p in pathlib.Path(served).rglob("*") if p.is_file()]
    assert any(published["content_key"] in str(p) for p in stored), stored
    assert sum(p.stat().st_size for p in stored) >= transfer["bytes"]

    again = runtime.remote_push("tests", ["fma"])
    assert [t["status"] for t in again] == ["present"]
    with pytest.raises(kiln.NotFoundError):
        runtime.remote_push("tests", ["absent"])


def test_a_refused_upload_says_what_the_server_answered(monkeypatch, tmp_path, host_plugin):
    served = tmp_path / "forbidding"
    served.mkdir()
    server = _serve(served, put_status=403)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/kiln"
        monkeypatch.setenv("KILN_REMOTE", url + ";read-write")
        runtime = kiln.Runtime()
        runtime.publish("tests", "fma", host_plugin)
        first = runtime.remote_push("tests")
        assert len(first) == 1 and first[0]["bytes"] == 0
        assert first[0]["status"].startswith("failed: ") and "HTTP 403" in first[0]["status"], first[0]
        # The remote is then skipped for retry_after seconds, and the status says so.
        second = runtime.remote_push("tests")
        assert second[0]["status"].startswith("failed: skipped: it failed less than 60 s ago"), second[0]
    finally:
        server.shutdown()
        server.server_close()


def test_push_to_read_only_remotes_is_refused(monkeypatch, http_remote):
    url, _ = http_remote
    monkeypatch.setenv("KILN_REMOTE", url + ";read-only")
    with pytest.raises(kiln.UsageError, match="read-only"):
        kiln.Runtime().remote_push("tests")


def test_without_a_signing_key_a_remote_is_only_read(monkeypatch, http_remote, host_plugin):
    url, served = http_remote
    monkeypatch.setenv("KILN_REMOTE", url)
    monkeypatch.delenv("KILN_REMOTE_SIGN", raising=False)
    monkeypatch.setenv("KILN_REMOTE_ACCEPT_UNSIGNED", "yes")
    runtime = kiln.Runtime()
    status = runtime.remote_status()
    assert status["remotes"][0]["read_only"] is True and status["accept_unsigned"] is True
    runtime.publish("tests", "fma", host_plugin)
    with pytest.raises(kiln.UsageError, match="read-only"):
        runtime.remote_push("tests")
    assert not [p for p in pathlib.Path(served).rglob("*") if p.is_file()]


def test_status_matches_the_cli(monkeypatch, http_remote):
    cli = os.environ.get("KILN_TEST_CLI")
    if not cli:
        pytest.skip("KILN_TEST_CLI is not set: no kiln CLI to compare with")
    url, _ = http_remote
    monkeypatch.setenv("KILN_REMOTE", url)
    ours = kiln.Runtime().remote_status()
    theirs = json.loads(subprocess.run([cli, "remote", "status", "--json"], check=True, capture_output=True,
                                       text=True).stdout)
    for item in ours["remotes"] + theirs["remotes"]:
        item.pop("round_trip_ms")
    assert ours == theirs
