"""Resumable downloads, checked against the server's announced size and a published MD5 sum."""

import hashlib
import http.client
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

from .errors import DataError

BLOCK_BYTES = 1 << 20
TIMEOUT_S = 60
HTTP_PARTIAL_CONTENT = 206


def download(url: str, destination: Path, md5: Optional[str] = None) -> Path:
    """Fetch url into destination, unless destination already exists.

    Bytes go to `destination.part` first, so that a run that was interrupted resumes where it
    stopped (an HTTP Range request); the file gets its final name only once it is complete.
    """
    if destination.exists():
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".part")
    print(f"downloading {url} -> {destination}", flush=True)
    announced_size = _fetch_rest(url, partial)
    if announced_size is not None:
        _check_size(url, partial, announced_size)
    if md5 is not None:
        _check_md5(url, partial, md5)
    partial.replace(destination)
    return destination


def _fetch_rest(url: str, partial: Path) -> Optional[int]:
    """Append to partial what it lacks; return the whole file's size if the server announced it."""
    offset = partial.stat().st_size if partial.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S) as response:
            if getattr(response, "status", None) != HTTP_PARTIAL_CONTENT:
                offset = 0  # the server sends the whole file, whatever we asked for
            length = response.headers.get("Content-Length")
            with partial.open("ab" if offset else "wb") as out:
                shutil.copyfileobj(response, out, BLOCK_BYTES)
    except (OSError, http.client.HTTPException) as error:  # URLError, timeouts, a cut connection, a full disk
        raise DataError(
            f"cannot download {url} ({error}); run again to resume, "
            "or fetch the file yourself and pass its folder with --from-dir"
        ) from error
    return offset + int(length) if length is not None else None


def _check_size(url: str, partial: Path, announced_size: int) -> None:
    size = partial.stat().st_size
    if size == announced_size:
        return
    if size > announced_size:
        partial.unlink()  # resuming cannot repair a file that is too long
    next_run = "resume" if size < announced_size else "start over"
    raise DataError(f"download of {url} has {size} bytes, the server announced {announced_size}; run again to {next_run}")


def _check_md5(url: str, partial: Path, expected: str) -> None:
    actual = file_md5(partial)
    if actual != expected:
        partial.unlink()
        raise DataError(
            f"download of {url} has MD5 {actual}, expected {expected}; the file was deleted, run again"
        )


def file_md5(path: Path) -> str:
    digest = hashlib.md5()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(BLOCK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()
