"""Binarize tokenized text with fairseq-preprocess, in either vocabulary mode."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, TextIO, Tuple

from bahdanau_plugin.output_folder import WRITE_FAILURES
from bahdanau_plugin.unknown_words import source_text_path

from ..errors import DataError
from .stages import own_and_others

FAIRSEQ_SPECIALS = 4  # <s>, <pad>, </s>, <unk>
WRITE_ERROR = re.compile(r"^\w*Error: \[Errno (\d+)\] ")  # a Python traceback's last line
TRACEBACK_START = "Traceback (most recent call last):"
# What binarize writes into a data-bin, whatever its languages and splits (binarized_files).
BINARIZED_NAME = re.compile(
    r"dict\.[^.]+\.txt|preprocess\.log|[^.]+\.[^.]+-[^.]+\.[^.]+\.(bin|idx|txt)"
)


@dataclass(frozen=True)
class Vocabulary:
    """`shortlist`: the `size` most frequent words of each language, the rest <unk> (the paper);
    `bpe`: one dictionary of joint BPE units learned with `size` merges (no unknown words)."""

    mode: str
    size: int


def preprocess_command(
    text_dir: Path,
    split_names: Sequence[str],
    destination: Path,
    vocabulary: Vocabulary,
    languages: Tuple[str, str],
    workers: int,
) -> List[str]:
    """fairseq-preprocess, run as the module behind that command, from this Python's environment."""
    command = [
        sys.executable,
        "-m",
        "fairseq_cli.preprocess",
        "--source-lang",
        languages[0],
        "--target-lang",
        languages[1],
        "--trainpref",
        str(text_dir / "train"),
        "--destdir",
        str(destination),
        "--workers",
        str(workers),
        # no filler symbols: the dictionaries hold exactly the words (or BPE units) and the specials
        "--padding-factor",
        "1",
    ]
    if "valid" in split_names:
        command += ["--validpref", str(text_dir / "valid")]
    test_names = [name for name in split_names if name.startswith("test")]
    if test_names:
        # fairseq names the binaries of these test, test1, test2, ... in this order
        command += ["--testpref", ",".join(str(text_dir / name) for name in test_names)]
    if vocabulary.mode == "bpe":
        return command + ["--joined-dictionary"]
    nwords = str(vocabulary.size + FAIRSEQ_SPECIALS)  # fairseq counts its specials in --nwords
    return command + ["--nwordssrc", nwords, "--nwordstgt", nwords]


def binarized_files(
    destination: Path, split_names: Sequence[str], languages: Tuple[str, str]
) -> List[Path]:
    """The files binarize writes: fairseq-preprocess's dictionaries, log and binaries, and the
    source text of every split but train. Only these are its outputs, so that a file put beside
    them does not make the stage run again."""
    source, target = languages
    files = [destination / f"dict.{language}.txt" for language in languages]
    files.append(destination / "preprocess.log")
    for name in split_names:
        prefix = f"{name}.{source}-{target}"
        files += [
            destination / f"{prefix}.{language}.{kind}"
            for language in languages
            for kind in ("bin", "idx")
        ]
        if name != "train":
            files.append(source_text_path(destination, name, source, target))
    return files


def check_only_binarized_files(destination: Path) -> None:
    """Binarizing anew replaces the whole folder (fairseq-preprocess refuses to write over its
    dictionaries): a file or folder put there by hand (notes, an --replace-unk dictionary,
    checkpoints) would go with it. Refused before fairseq-preprocess runs."""
    others = own_and_others(destination, BINARIZED_NAME)[1]
    if others:
        raise DataError(
            f"{others[0]} is in {destination}, which this command replaces as it binarizes anew: "
            f"move it out of {destination.name}, then run the same command again"
        )


def binarize(
    text_dir: Path,
    split_names: Sequence[str],
    destination: Path,
    vocabulary: Vocabulary,
    languages: Tuple[str, str],
    workers: int,
) -> None:
    """fairseq binaries of every split in destination, and beside them the source text of every
    split but train: where --replace-unk finds the real words of fairseq-generate's sources."""
    check_only_binarized_files(destination)
    partial = destination.with_name(destination.name + ".part")
    if partial.exists():
        shutil.rmtree(partial)  # fairseq-preprocess refuses to overwrite its dictionaries
    command = preprocess_command(text_dir, split_names, partial, vocabulary, languages, workers)
    print("running", " ".join(command), flush=True)
    try:
        returncode, traceback = run_apart_from_ctrl_c(command)
    except KeyboardInterrupt:
        shutil.rmtree(partial, ignore_errors=True)  # nothing half-written left behind
        raise
    if returncode != 0:
        check_written(traceback, partial)
    sys.stderr.write(traceback)
    if returncode != 0:
        raise DataError(
            f"fairseq-preprocess failed with exit status {returncode}; "
            f"its messages are above and in {partial / 'preprocess.log'}"
        )
    for name in split_names:
        if name != "train":
            shutil.copyfile(
                text_dir / f"{name}.{languages[0]}", source_text_path(partial, name, *languages)
            )
    if destination.exists():
        shutil.rmtree(destination)
    partial.rename(destination)


def check_written(traceback: str, destination: Path) -> None:
    """fairseq-preprocess ended by an error of writing (a full disk) raises it here, for the
    command to say in one line (bahdanau_plugin/output_folder.py) rather than as fairseq's
    traceback, whose last line names it."""
    lines = traceback.strip().splitlines()
    found = WRITE_ERROR.match(lines[-1]) if lines else None
    if found and int(found.group(1)) in WRITE_FAILURES:
        number = int(found.group(1))
        raise OSError(number, os.strerror(number), str(destination))


def run_apart_from_ctrl_c(command: List[str]) -> Tuple[int, str]:
    """Run command to its end, its messages passed on as they come (pass_on_messages); return its
    exit status and the traceback it ended in, if any. Ctrl+C, which the terminal sends to its
    whole foreground group, would have fairseq-preprocess and each of its workers print a
    traceback: they run in a session of their own instead, and when Ctrl+C stops this process
    they are ended with SIGTERM, which Python processes obey without a word."""
    with subprocess.Popen(
        command, start_new_session=True, stderr=subprocess.PIPE, encoding="utf-8", errors="replace"
    ) as process:
        try:
            traceback = pass_on_messages(process.stderr)
            return process.wait(), traceback
        except KeyboardInterrupt:
            with contextlib.suppress(ProcessLookupError):  # unless they all ended meanwhile
                os.killpg(process.pid, signal.SIGTERM)
            process.wait()
            raise


def pass_on_messages(stream: TextIO) -> str:
    """Write each line of stream to stderr as it comes, up to a Python traceback, which is
    returned instead: held until the exit status says whether it is a failure to write, which the
    command says in one line (check_written). fairseq-preprocess logs to stderr (fairseq's
    text_to_speech task, which it imports, sets up logging first), and held to its end, its lines
    said nothing for minutes: 70 s for 200,000 pairs on 2 cores, over an hour for the paper's 12
    million."""
    held = []
    for line in stream:
        if held or line.startswith(TRACEBACK_START):
            held.append(line)
        else:
            sys.stderr.write(line)
            sys.stderr.flush()
    return "".join(held)
