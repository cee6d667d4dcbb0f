"""Downloads resume where they stopped, and are checked against the announced size and MD5 sum."""

import hashlib
import http.server
import threading
from contextlib import contextmanager

import pytest

from bahdanau_tools.data import download as download_module
from bahdanau_tools.data.download import download
from bahdanau_tools.errors import DataError

CONTENT = bytes(range(256)) * 40
CONTENT_MD5 = hashlib.md5(CONTENT).hexdigest()


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves `server.content` (CONTENT) with its ETag (none where not `server.names_versions`),
    honours `Range: bytes=N-` (416 past the end, as real servers answer) where `If-Range` names
    the content served, and cuts the first `server.cut_after` bytes short."""

    def do_GET(self):  # noqa: N802  (http.server's naming)
        self.server.ranges.append(self.headers.get("Range"))
        content = self.server.content
        etag = f'"{hashlib.md5(content).hexdigest()}"'
        start = int(self.headers["Range"][len("bytes=") : -1]) if self.headers.get("Range") else 0
        if self.headers.get("If-Range", etag) != etag:  # another version: the whole file
            start = 0
        if start >= len(content):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(content)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = content[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        if self.server.names_versions and not (start and self.server.parts_without_etag):
            self.send_header("ETag", etag)
        self.end_headers()
        cuts = self.server.cut_after if isinstance(self.server.cut_after, list) else []
        cut_after = cuts.pop(0) if cuts else self.server.cut_after
        self.server.cut_after = cuts or None
        self.wfile.write(body[:cut_after])

    def log_message(self, *arguments):
        pass


@contextmanager
def serving(cut_after=None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    server.ranges, server.cut_after, server.content = [], cut_after, CONTENT
    server.parts_without_etag, server.names_versions = False, True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}/file.bin"
    finally:
        server.shutdown()
        server.server_close()


def test_an_interrupted_download_is_a_one_line_error_and_the_next_run_resumes_it(tmp_path):
    destination = tmp_path / "file.bin"
    with serving(cut_after=1000) as (server, url):
        with pytest.raises(DataError, match="run again to resume") as error:
            download(url, destination)
        assert "\n" not in str(error.value)
        download(url, destination)
    assert server.ranges == [None, "bytes=1000-"]
    assert destination.read_bytes() == CONTENT
    assert list(tmp_path.iterdir()) == [destination]


def test_a_download_resumed_after_the_file_changed_on_the_server_is_fetched_whole(tmp_path):
    """The part's head and the other version's tail (of the same size: no check of the size
    could tell) would make a file that is neither."""
    destination, changed = tmp_path / "file.bin", bytes(reversed(CONTENT))
    with serving(cut_after=1000) as (server, url):
        with pytest.raises(DataError, match="run again to resume"):
            download(url, destination)
        server.content = changed
        download(url, destination)
    assert server.ranges == [None, "bytes=1000-"]
    assert destination.read_bytes() == changed


def test_a_part_sent_without_its_etag_keeps_the_version_for_the_next_resumption(tmp_path):
    destination, changed = tmp_path / "file.bin", bytes(reversed(CONTENT))
    with serving(cut_after=[1000, 1000]) as (server, url):  # cut twice, each a byte count
        server.parts_without_etag = True
        for _ in range(2):
            with pytest.raises(DataError, match="run again to resume"):
                download(url, destination)
        server.content = changed
        download(url, destination)
    assert server.ranges == [None, "bytes=1000-", "bytes=2000-"]
    assert destination.read_bytes() == changed


def test_a_part_of_a_version_the_server_does_not_name_is_fetched_again_whole(tmp_path, capsys):
    """Without an MD5 sum either, nothing could tell the part's head and a changed file's tail."""
    destination, changed = tmp_path / "file.bin", bytes(reversed(CONTENT))
    with serving(cut_after=1000) as (server, url):
        server.names_versions = False
        with pytest.raises(DataError, match="run again to resume"):
            download(url, destination)
        server.content = changed
        download(url, destination)
    assert server.ranges == [None, None]
    assert destination.read_bytes() == changed
    assert (
        "file.bin.part: no version named, no MD5 to check a resumption" in capsys.readouterr().out
    )


def test_a_part_of_a_version_the_server_does_not_name_resumes_where_an_md5_checks_it(tmp_path):
    destination = tmp_path / "file.bin"
    with serving(cut_after=1000) as (server, url):
        server.names_versions = False
        with pytest.raises(DataError, match="run again to resume"):
            download(url, destination, md5=CONTENT_MD5)
        download(url, destination, md5=CONTENT_MD5)
    assert server.ranges == [None, "bytes=1000-"]
    assert destination.read_bytes() == CONTENT


def test_a_download_shows_the_bytes_fetched_of_the_announced_size_and_the_rate(tmp_path, capsys):
    with serving() as (_, url):
        download(url, tmp_path / "file.bin")
    progress = capsys.readouterr().err
    assert "file.bin: 100%" in progress and "10.0k/10.0k" in progress and "B/s]" in progress


def killed_while_verifying(path):
    raise KeyboardInterrupt


def test_a_run_killed_after_the_last_byte_is_finished_by_the_next_run_without_a_request(
    tmp_path, monkeypatch
):
    destination = tmp_path / "file.bin"
    with serving() as (server, url):
        with monkeypatch.context() as killed:
            killed.setattr(download_module, "file_md5", killed_while_verifying)
            with pytest.raises(KeyboardInterrupt):
                download(url, destination, md5=CONTENT_MD5)
        download(url, destination, md5=CONTENT_MD5)
    assert server.ranges == [None]
    assert destination.read_bytes() == CONTENT
    assert list(tmp_path.iterdir()) == [destination]


def test_a_complete_part_without_its_recorded_size_is_finished_when_the_server_answers_416(
    tmp_path,
):
    (tmp_path / "file.bin.part").write_bytes(
        CONTENT
    )  # as a run killed before it was renamed leaves it
    with serving() as (server, url):
        download(url, tmp_path / "file.bin", md5=CONTENT_MD5)
    assert server.ranges == [f"bytes={len(CONTENT)}-"]
    assert list(tmp_path.iterdir()) == [tmp_path / "file.bin"]
    assert (tmp_path / "file.bin").read_bytes() == CONTENT


def test_a_part_longer_than_the_file_is_downloaded_again_from_the_start(tmp_path):
    (tmp_path / "file.bin.part").write_bytes(CONTENT + b"stale bytes")
    with serving() as (server, url):
        download(url, tmp_path / "file.bin", md5=CONTENT_MD5)
    assert server.ranges == [f"bytes={len(CONTENT) + len(b'stale bytes')}-", None]
    assert (tmp_path / "file.bin").read_bytes() == CONTENT


def test_a_server_that_ignores_the_range_gets_the_file_written_from_the_start(tmp_path):
    source = tmp_path / "published.bin"
    source.write_bytes(CONTENT)
    (tmp_path / "file.bin.part").write_bytes(b"stale bytes")
    download(
        source.as_uri(), tmp_path / "file.bin"
    )  # file: URLs answer every request with the whole file
    assert (tmp_path / "file.bin").read_bytes() == CONTENT


def test_a_file_whose_md5_differs_is_deleted_and_reported(tmp_path):
    source = tmp_path / "published.bin"
    source.write_bytes(CONTENT)
    with pytest.raises(DataError, match="MD5"):
        download(source.as_uri(), tmp_path / "file.bin", md5="0" * 32)
    assert list(tmp_path.iterdir()) == [source]


def test_a_file_with_the_published_md5_is_kept(tmp_path):
    source = tmp_path / "published.bin"
    source.write_bytes(CONTENT)
    download(source.as_uri(), tmp_path / "file.bin", md5=CONTENT_MD5)
    assert (tmp_path / "file.bin").read_bytes() == CONTENT


def test_a_file_already_downloaded_is_not_fetched_again(tmp_path):
    (tmp_path / "file.bin").write_bytes(b"complete")
    download((tmp_path / "nowhere.bin").as_uri(), tmp_path / "file.bin")
    assert (tmp_path / "file.bin").read_bytes() == b"complete"
