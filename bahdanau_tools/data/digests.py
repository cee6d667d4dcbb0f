"""Files told apart by their content: a SHA-256 digest, computed once per version of a file.

Content, because size and modification time do not tell two files apart: `cp -p` (or `touch -r`,
`rsync -t`, tar) of another archive of the same size over the old one gives it the old one's
modification time, and a stage kept on them kept the outputs of the old archive.

A version, (device, inode, size, mtime_ns, ctime_ns), stands in for reading a file again, which
costs about 0.8 s per GiB here (sha256 with the CPU's SHA instructions, from the page cache; more
from a cold disk), some 40 GB over WMT'14's archives and the outputs made from them. The kernel sets
ctime to the current time at every change of a file's content or metadata (a write, a truncation,
utime: `cp -p` included), and no call sets it to a chosen value (short of setting the system
clock); a file put in place of another has its own inode, or its own ctime. So a change of content
changes the version, and the file is read and hashed again; a change of metadata alone (chmod,
touch, another inode numbering) costs a hashing, never a rerun of the stages. What this cannot
see: a second write within the same clock tick as the one before it (milliseconds), made after
the file was hashed, and file systems that keep no ctime of their own (FAT, exFAT and some FUSE
mounts report the mtime as the ctime).
"""

import hashlib
import json
import os
from pathlib import Path
from typing import Dict, Tuple

from bahdanau_plugin.output_folder import written_whole

from ..errors import DataError

HASH = "sha256"  # with SHA instructions, faster than blake2b and md5 (0.8, 1.4, 1.6 s per GiB)
Version = Tuple[int, int, int, int, int]


def file_version(path: Path) -> Version:
    """What changes whenever the file's content does (see above), without reading it."""
    status = os.stat(path)
    return (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


def file_hash(path: Path, algorithm: str) -> str:
    """The file's hash by hashlib's ``algorithm``, read in blocks of a MiB (hashlib.file_digest
    does the same from Python 3.11 on only)."""
    hashed = hashlib.new(algorithm)
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            hashed.update(block)
    return hashed.hexdigest()


def content_digest(path: Path) -> Tuple[Version, str]:
    """The file's digest, and the version of the file it is the digest of."""
    version = file_version(path)
    digest = file_hash(path, HASH)
    if file_version(path) != version:
        raise DataError(
            f"{path} changed while it was read; run again once whatever writes it has finished"
        )
    return version, digest


class DigestCache:
    """Digests by path, each with the version of the file it was computed from, kept in a JSON file
    from one run to the next."""

    def __init__(self, path: Path):
        self.path = path
        self.entries = _read_entries(path)
        self.unsaved = False

    def digest(self, file: Path) -> str:
        version = list(file_version(file))
        entry = self.entries.get(str(file))
        if isinstance(entry, dict) and entry.get("version") == version and HASH in entry:
            return entry[HASH]
        version, digest = content_digest(file)
        self.entries[str(file)] = {"version": list(version), HASH: digest}
        self.unsaved = True
        return digest

    def save(self) -> None:
        """Written whole: a run stopped meanwhile leaves the old file as it was."""
        if not self.unsaved:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with written_whole(str(self.path)) as file:
            file.write(json.dumps(self.entries, indent=1).encode("utf-8"))
        self.unsaved = False


def _read_entries(path: Path) -> Dict[str, dict]:
    """The entries saved at path; none where there is no such file or it is not one (damaged): the
    files are hashed again, which is all a lost entry costs."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}
