"""Stages that a rerun does not redo: each finished stage leaves a record, OUT/stages/NAME.json.

A stage writes its outputs under temporary names and renames them when they are complete; only
then is its record written, holding the settings it ran with, the content digest of its input and
output files (digests.py) and its result (counts the summary needs). A rerun keeps a stage whose
record matches all of these, and reruns it otherwise: after a crash inside it, after a change of
its options or of an input's content (one line names the input then; an earlier stage that ran
again and wrote other outputs makes every later stage run again too), or when an output was
deleted or changed since. Files are compared by content in the order the stage lists them, not by
path: the same files given by another path (relative, absolute, through a link) keep it. A record
that is not one (not JSON, or without a record's fields: a file damaged, or edited by hand) counts
as none, with a warning: the stage runs again.
"""

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Pattern, Sequence, Tuple

from ..errors import DataError
from .digests import HASH, DigestCache, Version, file_version

Fingerprints = Dict[str, Optional[str]]
RECORD_FIELDS = ("key", "outputs", "result")
STAGES_FOLDER = "stages"  # in out: the records, and the digests of the files they name


def files_in(paths: Sequence[Path]) -> List[Path]:
    """Each path that is not a folder, and the files inside each folder."""
    return [
        member
        for path in paths
        for member in (
            sorted(member for member in path.rglob("*") if member.is_file())
            if path.is_dir()
            else [path]
        )
    ]


def own_and_others(folder: Path, own_name: Pattern[str]) -> Tuple[List[Path], List[Path]]:
    """What folder holds, sorted, in two lists: the files named as a stage names the files it
    writes there (own_name matches the whole name), which are its own to replace or remove; and
    everything else, files under other names and folders, which someone put there and a stage
    never deletes. Nothing where there is no such folder."""
    if not folder.is_dir():
        return [], []
    own, others = [], []
    for path in sorted(folder.iterdir()):
        (own if path.is_file() and own_name.fullmatch(path.name) else others).append(path)
    return own, others


def _as_json(value: Any) -> Any:
    """value as it reads back from JSON (tuples become lists), so that records compare equal."""
    return json.loads(json.dumps(value))


def in_stage_order(fingerprints: Any) -> Any:
    """The digests of fingerprints in the order the stage lists its files, without their paths: a
    stage's code gives each file its role by its place in that list, and a path is only how this
    run spelled it (relative to another folder, absolute, through a link), which a rerun spells as
    its user likes. Compared by path, --out /data/wmt14 after --out wmt14 (or a corpus given from
    another folder) ran every stage again: hours of WMT'14, said as "FILE changed"."""
    return list(fingerprints.values()) if isinstance(fingerprints, dict) else fingerprints


def same_key(recorded_key: Any, key: dict) -> bool:
    """Whether a record's key is key: the same settings and hash, and inputs of the same content."""
    if not isinstance(recorded_key, dict) or recorded_key.keys() != key.keys():
        return False
    return all(
        in_stage_order(recorded_key[field]) == in_stage_order(key[field])
        if field == "inputs"
        else recorded_key[field] == key[field]
        for field in key
    )


def changed_inputs(recorded_key: Any, key: dict) -> List[str]:
    """The inputs whose digest differs from the record's, for the same path or, for a path the
    record spells otherwise, in the same place; none for a record whose inputs were not told apart
    by the same hash (an earlier version of this tool's), which cannot say which did."""
    if not isinstance(recorded_key, dict) or recorded_key.get("hash") != HASH:
        return []
    recorded = recorded_key.get("inputs")
    recorded = recorded if isinstance(recorded, dict) else {}
    in_order = list(recorded.values())
    return [
        path
        for place, (path, digest) in enumerate(key["inputs"].items())
        if recorded.get(path, in_order[place] if place < len(in_order) else None) != digest
    ]


def changed_inputs_line(name: str, changed: Sequence[str]) -> str:
    more = f" and {len(changed) - 1} more of its inputs" if len(changed) > 1 else ""
    return f"{name}: {changed[0]}{more} changed since the earlier run: the stage runs again"


def digest_cache(out: Path) -> DigestCache:
    """The digests of the files that the stages writing into out read and wrote, and that the
    checks of their inputs hashed: a file is hashed once, whichever of them reads it first."""
    return DigestCache(out / STAGES_FOLDER / "digests.json")


class Stages:
    def __init__(self, out: Path):
        self.directory = out / STAGES_FOLDER
        self.digests = digest_cache(out)

    def fingerprints(self, paths: Sequence[Path]) -> Fingerprints:
        """The content digest of each file, or of each file inside a folder; None if missing."""
        found = {
            str(file): self.digests.digest(file) if file.exists() else None
            for file in files_in(paths)
        }
        self.digests.save()
        return found

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
        versions = input_versions(inputs)  # before their digests: the key's are of these versions
        key = _as_json({"hash": HASH, "settings": settings, "inputs": self.fingerprints(inputs)})
        record = read_record(record_path)
        legacy = record is not None and is_legacy_record(record, settings, inputs, outputs)
        if legacy or (
            record is not None
            and same_key(record["key"], key)
            and in_stage_order(record["outputs"]) == in_stage_order(self.fingerprints(outputs))
        ):
            print(f"{name}: finished by an earlier run, kept", file=sys.stderr, flush=True)
            if legacy:  # its files told apart by their content from now on
                self._write_record(record_path, key, outputs, record["result"])
            return record["result"]
        changed = changed_inputs(record["key"], key) if record is not None else []
        if changed:
            print(changed_inputs_line(name, changed), file=sys.stderr, flush=True)
        record_path.unlink(missing_ok=True)
        result = work()
        check_inputs_unchanged(name, versions)
        self._write_record(record_path, key, outputs, result)
        return _as_json(result)

    def _write_record(self, path: Path, key: dict, outputs: Sequence[Path], result: Any) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        record = {"key": key, "outputs": self.fingerprints(outputs), "result": result}
        with written_whole([path]) as [partial]:
            partial.write_text(json.dumps(record, indent=1), encoding="utf-8")


def version_now(file: Path) -> Optional[Version]:
    """The file's version (digests.py), None where it is missing."""
    return file_version(file) if file.exists() else None


def input_versions(paths: Sequence[Path]) -> Dict[Path, Optional[Version]]:
    return {file: version_now(file) for file in files_in(paths)}


def check_inputs_unchanged(name: str, versions: Dict[Path, Optional[Version]]) -> None:
    """A stage whose input changed while it ran (a corpus file written over by a download, a copy)
    read two versions of it: the lines of one side after the change beside those of the other
    before, pairs that do not translate each other. Its record, which would hold the digest taken
    before, is not written, so that the next run does the stage again."""
    changed = next(
        (file for file, version in versions.items() if version_now(file) != version), None
    )
    if changed is not None:
        raise DataError(
            f"{changed} changed while the {name} stage read it, whose outputs may mix its two "
            "versions: run the same command again once whatever writes it has finished"
        )


def sizes_and_times(paths: Sequence[Path]) -> Dict[str, List[int]]:
    """Size and modification time of each file, or of each file inside a folder ([] if missing):
    how records told files apart before their content's digests."""
    statuses = {str(file): file.stat() if file.exists() else None for file in files_in(paths)}
    return {
        file: [status.st_size, status.st_mtime_ns] if status else []
        for file, status in statuses.items()
    }


def is_legacy_record(record: dict, settings: Any, inputs, outputs) -> bool:
    """Whether a record of an earlier version of this tool, without digests, still matches the
    stage by its files' sizes and modification times, as that version checked it: kept once, so
    that a folder prepared before (hours of WMT'14) is not prepared again for the upgrade."""
    key = record["key"]
    return (
        not (isinstance(key, dict) and "hash" in key)
        and key == _as_json({"settings": settings, "inputs": sizes_and_times(inputs)})
        and record["outputs"] == sizes_and_times(outputs)
    )


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
