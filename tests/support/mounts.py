"""Commands run with a small file system mounted on a folder: a read-only folder, a full disk.

Each command runs in a mount namespace of its own (util-linux's ``unshare --user --map-root-user
--mount``), where it may mount a tmpfs without being root and without touching the machine's
mounts; a test is skipped, saying why, where the kernel or the container allows no such namespace.
"""

import functools
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

import pytest

from .tools import fairseq_env


def _unshare() -> str:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is missing (util-linux): no small file system to mount")
    return unshare


def _namespace(unshare: str) -> list:
    return [unshare, "--user", "--map-root-user", "--mount"]


@functools.lru_cache(maxsize=None)
def mount_namespace_refused() -> str:
    """Why no tmpfs can be mounted in a namespace of its own here; "" where one can."""
    with tempfile.TemporaryDirectory() as folder:
        completed = subprocess.run(
            _namespace(_unshare()) + ["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", folder],
            capture_output=True,
            text=True,
        )
    return "" if completed.returncode == 0 else completed.stderr.strip()[-300:] or "refused"


def with_tmpfs(
    folder: Path, mount_options: str, command: Sequence, fill: bool = False, cwd=None
) -> subprocess.CompletedProcess:
    """Run command (its output as text) with a tmpfs mounted on folder with mount_options ("ro",
    "size=100k", ...), filled to the last byte first if fill."""
    if mount_namespace_refused():
        pytest.skip(
            "cannot mount a tmpfs in a user namespace here (unshare --user --map-root-user "
            f"--mount): {mount_namespace_refused()}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    script = f"mount -t tmpfs -o {mount_options} tmpfs {shlex.quote(str(folder))}"
    if fill:  # cat ends when the disk is full
        script += f" && (cat /dev/zero > {shlex.quote(str(folder / 'filler'))} 2> /dev/null; true)"
    script += " && exec " + shlex.join(map(str, command))
    return subprocess.run(
        _namespace(_unshare()) + ["sh", "-c", script],
        capture_output=True,
        text=True,
        env=fairseq_env(),
        cwd=cwd,
        timeout=600,
    )
