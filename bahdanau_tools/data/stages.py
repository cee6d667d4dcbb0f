"""Stages that a rerun does not redo: each finished stage leaves a record, OUT/stages/NAME.json.

A stage writes its outputs under temporary names and renames them when they are complete; only
then is its record written, holding the settings it ran with, the size and modification time of
its input and output files, and its result (counts the summary needs). A rerun keeps a stage whose
record matches all of these, and reruns it otherwise: after a crash inside it, after a change of
its options or of an input file (an earlier stage that ran again rewrites its outputs, so every
later stage runs again too), or when an output was deleted or changed since. A record that is not
one (not JSON, or without a record's fields: a file damaged, or edited by hand) counts as none,
with a warning: the stage runs again.
"""

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

Fingerprints = Dict[str, List[int]]
RECORD_FIELDS = ("key", "outputs", "result")


def fingerprints(paths: Sequence[Path]) -> Fingerprints:
    """Size and modification time of each file, or of each file inside a folder; [] if missing."""
    files = {}
    for path in paths:
        members = (
            sorted(member for member in path.rglob("*") if member.is_file())
            if path.is_dir()
            else [path]
        )
        for member in members:
            status = member.stat() if member.exists() else None
            files[str(member)] = [status.st_size, status.st_mtime_ns] if status else []
    return files


def _as_json(value: Any) -> Any:
    """value as it reads back from JSON (tuples become lists), so that records compare equal."""
    return json.loads(json.dumps(value))


class Stages:
    def __init__(self, out: Path):
        self.directory = out / "stages"

    def run(
        self,
        name: str,
        settings: Any,
        inputs: Sequence[Path],
        outputs: Sequence[Path],
        work: Callable[[], Any],
    ) -> Any:
        """work()'s result, or the result recorded by an earlier run of the same stage on the same
        inputs."""
        record_path = self.directory / f"{name}.json"
        key = _as_json({"settings": settings, "inputs": fingerprints(inputs)})
        record = read_record(record_path)
        if (
            record is not None
            and record["key"] == key
            and record["outputs"] == fingerprints(outputs)
        ):
            print(f"{name}: finished by an earlier run, kept", file=sys.stderr, flush=True)
            return record["result"]
        record_path.unlink(missing_ok=True)
        result = work()
        self.directory.mkdir(parents=True, exist_ok=True)
        partial = record_path.with_name(record_path.name + ".part")
        partial.write_text(
            json.dumps({"key": key, "outputs": fingerprints(outputs), "result": result}, indent=1),
            encoding="utf-8",
        )
        partial.replace(record_path)
        return _as_json(result)


def read_record(path: Path) -> Optional[dict]:
    """The stage record at path; None where there is none, or where the file is not one (a warning
    line names it then)."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        record = None
    if isinstance(record, dict) and all(field in record for field in RECORD_FIELDS):
        return record
    print(
        f"warning: {path} is not the record of a finished stage (damaged?): the stage runs again",
        file=sys.stderr,
        flush=True,
    )
    return None


@contextmanager
def written_whole(paths: Sequence[Path]) -> Iterator[List[Path]]:
    """Temporary names to write paths under; each gets its own name once the block ends without
    error, and is deleted if it ends with one (an error, Ctrl+C), so that no half-written file is
    left behind."""
    partial = [path.with_name(path.name + ".part") for path in paths]
    try:
        yield partial
    except BaseException:
        for written in partial:
            written.unlink(missing_ok=True)
        raise
    for written, path in zip(partial, paths):
        written.replace(path)
