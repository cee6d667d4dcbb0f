"""A file's digest is that of one version of it: a file written while it is read is an error."""

import hashlib

import pytest

from bahdanau_tools.data.digests import content_digest
from bahdanau_tools.errors import DataError


def test_a_file_written_while_it_is_hashed_is_an_error_saying_to_wait(tmp_path, monkeypatch):
    """A download or a copy still under way: its digest would be of neither version."""
    path = tmp_path / "dev.tgz"
    path.write_bytes(b"the first part")
    file_digest = hashlib.file_digest

    def digest_while_appending(stream, name):
        with path.open("ab") as more:
            more.write(b", and the rest")
        return file_digest(stream, name)

    monkeypatch.setattr(hashlib, "file_digest", digest_while_appending)
    with pytest.raises(DataError, match=f"^{path} changed while it was read; run again once"):
        content_digest(path)
