"""A file's digest is that of one version of it: a file written while it is read is an error."""

import hashlib

import pytest

from bahdanau_tools.data import digests
from bahdanau_tools.data.digests import content_digest
from bahdanau_tools.errors import DataError


def test_a_file_written_while_it_is_hashed_is_an_error_saying_to_wait(tmp_path, monkeypatch):
    """A download or a copy still under way: its digest would be of neither version."""
    path = tmp_path / "dev.tgz"
    path.write_bytes(b"the first part")
    file_hash = digests.file_hash

    def hash_while_appending(file, algorithm):
        with path.open("ab") as more:
            more.write(b", and the rest")
        return file_hash(file, algorithm)

    monkeypatch.setattr(digests, "file_hash", hash_while_appending)
    with pytest.raises(DataError, match=f"^{path} changed while it was read; run again once"):
        content_digest(path)


def test_a_digest_needs_no_hashlib_file_digest_which_python_3_10_lacks(tmp_path, monkeypatch):
    monkeypatch.delattr(hashlib, "file_digest", raising=False)
    path = tmp_path / "dev.tgz"
    path.write_bytes(b"x" * (3 << 20))
    assert content_digest(path)[1] == hashlib.sha256(b"x" * (3 << 20)).hexdigest()
