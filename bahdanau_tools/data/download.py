"""Resumable downloads, checked against the server's announced size and a published MD5 sum."""

import http.client
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import BinaryIO, Optional, Tuple

from ..errors import DataError
from .digests import file_hash
from .progress import byte_progress_bar

BLOCK_BYTES = 1 << 20
TIMEOUT_S = 60
HTTP_PARTIAL_CONTENT = 206
HTTP_RANGE_NOT_SATISFIABLE = 416


def download(url: str, destination: Path, md5: Optional[str] = None) -> Path:
    """Fetch url into destination, unless destination already exists.

    Bytes go to `destination.part` first, so that a run that was interrupted resumes where it
    stopped (an HTTP Range request); the file gets its final name only once it is complete. The
    size the server announced is kept beside it in `destination.part.size`, so that a part that a
    killed run had already completed is checked and renamed without asking the server again, with
    what names that version of the file (its ETag or date): a resumption asks for the rest of that
    version only (If-Range), and the server sends the whole file if it has changed since, where
    the part's head and another version's tail would make a file that is neither. Where the server
    names no version and no MD5 is published, nothing could tell: the part is fetched again whole.
    """
    if destination.exists():
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".part")
    expected_size, _ = _recorded(partial)
    if expected_size is None or _size(partial) != expected_size:
        print(f"downloading {url} -> {destination}", flush=True)
        expected_size = _fetch_rest(url, partial, checked=md5 is not None)
    if expected_size is not None:
        _check_size(url, partial, expected_size)
    if md5 is not None:
        _check_md5(url, partial, md5)
    partial.replace(destination)
    _size_record(partial).unlink(missing_ok=True)
    return destination


def _fetch_rest(url: str, partial: Path, checked: bool) -> Optional[int]:
    """Append to partial what it lacks, if its version is known or the result ``checked`` (by an
    MD5 sum), else fetch it whole; return the whole file's size if the server announced it."""
    offset = _size(partial)
    version = _recorded(partial)[1] if offset else ""
    if offset and not (version or checked):
        print(f"{partial.name}: no version named, no MD5 to check a resumption: fetched whole")
        offset = 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    if version:  # the rest of this version, or the whole file if it changed (RFC 9110, If-Range)
        headers["If-Range"] = version
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S
        ) as response:
            if getattr(response, "status", None) != HTTP_PARTIAL_CONTENT:
                offset = 0  # the server sends the whole file, whatever we asked for
            length = response.headers.get("Content-Length")
            size = offset + int(length) if length is not None else None
            # before the long copy: a run killed after it knows the size, and the version (a
            # part sent without its validator is of the version asked for)
            _record(partial, size, _version(response.headers) or (version if offset else ""))
            with partial.open("ab" if offset else "wb") as out:
                copy_with_progress(response, out, partial.stem, size, offset)
    except urllib.error.HTTPError as error:
        if error.code != HTTP_RANGE_NOT_SATISFIABLE or not offset:
            raise _download_error(url, error) from error
        return _after_unsatisfiable_range(url, partial, error.headers.get("Content-Range"), checked)
    except (
        OSError,
        http.client.HTTPException,
    ) as error:  # URLError, timeouts, a cut connection, a full disk
        raise _download_error(url, error) from error
    return size


def _after_unsatisfiable_range(
    url: str, partial: Path, content_range: Optional[str], checked: bool
) -> Optional[int]:
    """A 416 to `Range: bytes=N-`: the server has nothing after the part's end. If its
    `Content-Range: bytes */SIZE` says the file is as long as the part, the part is whole (a run
    was killed before renaming it); otherwise the part is longer than the file (it began another
    version of it) or the size is not given, and the download starts again from the first byte."""
    announced = re.fullmatch(r"bytes \*/(\d+)", (content_range or "").strip())
    if announced and int(announced.group(1)) == _size(partial):
        return _size(partial)
    _discard(partial)
    return _fetch_rest(url, partial, checked)


def copy_with_progress(
    source: BinaryIO, out: BinaryIO, description: str, total: Optional[int], done: int = 0
) -> None:
    """Copy source to out, showing the bytes copied (done before this call included), the rate and
    the time left if total is known."""
    with byte_progress_bar(description, total, done) as progress:
        for block in iter(lambda: source.read(BLOCK_BYTES), b""):
            out.write(block)
            progress.update(len(block))


def _download_error(url: str, error: Exception) -> DataError:
    return DataError(
        f"cannot download {url} ({error}); run again to resume, or fetch the file yourself and "
        "pass its folder with --from-dir"
    )


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _size_record(partial: Path) -> Path:
    return partial.with_name(partial.name + ".size")


def _version(headers) -> str:
    """What names the version of the file a response sent, for If-Range: its strong ETag, else its
    Last-Modified date ("" where the server gives neither: a resumption then cannot be checked)."""
    etag = headers.get("ETag") or ""
    return etag if etag and not etag.startswith("W/") else headers.get("Last-Modified") or ""


def _record(partial: Path, size: Optional[int], version: str) -> None:
    """The whole file's size (a line, empty if unknown) and its version, beside the part."""
    _size_record(partial).write_text(f"{'' if size is None else size}\n{version}\n")


def _recorded(partial: Path) -> Tuple[Optional[int], str]:
    """The size and version recorded beside the part: (None, "") for what is not (a record of an
    earlier version of this tool holds the size alone)."""
    record = _size_record(partial)
    size, version, *_ = (record.read_text().splitlines() if record.exists() else []) + ["", ""]
    return (int(size) if size.strip().isdigit() else None), version.strip()


def _discard(partial: Path) -> None:
    partial.unlink(missing_ok=True)
    _size_record(partial).unlink(missing_ok=True)


def _check_size(url: str, partial: Path, announced_size: int) -> None:
    size = partial.stat().st_size
    if size == announced_size:
        return
    if size > announced_size:
        _discard(partial)  # resuming cannot repair a file that is too long
    next_run = "resume" if size < announced_size else "start over"
    raise DataError(
        f"download of {url} has {size} bytes, the server announced {announced_size}; run again to "
        f"{next_run}"
    )


def _check_md5(url: str, partial: Path, expected: str) -> None:
    actual = file_md5(partial)
    if actual != expected:
        _discard(partial)
        raise DataError(
            f"download of {url} has MD5 {actual}, expected {expected}; the file was deleted, run "
            "again"
        )


def file_md5(path: Path) -> str:
    return file_hash(path, "md5")
