"""Session fixtures made once for all of make test's workers, not once per worker: the first worker
that asks for one makes it, in a folder of the run's temporary folder that every worker sees, while
another that asks meanwhile waits on its lock; then they only read it (pytest-xdist's recipe for
a session fixture). Each fixture is a tool's run of several seconds (a tiny model trained, a corpus
prepared), and both workers ask for most of them."""

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder called name that make(folder) fills, made once in the whole test run."""
    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent  # the run's temporary folder, beside each worker's
    shared = run / "made-once"
    shared.mkdir(exist_ok=True)
    folder, made = shared / name, shared / f"{name}.made"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes, or its process ends
        if not made.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a worker that failed left
            folder.mkdir()
            make(folder)
            made.touch()
    return folder
