"""fairseq-generate (beam search) as a subprocess, and the hypotheses it printed: detokenized (its
D- lines) and tokenized (its H- lines, BPE removed)."""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from fairseq.data import data_utils

import bahdanau_plugin
from bahdanau_plugin.tasks.translation_with_source_words import NAME as SOURCE_WORDS_TASK

from ..errors import EvaluationError

PLUGIN = Path(bahdanau_plugin.__file__).parent  # the folder --user-dir takes
RESULT_LINE = re.compile(r"^[STHDPA]-\d+\t")  # fairseq-generate's per-sentence lines
# the hypothesis as fairseq-generate prints it after BPE removal and detokenization
DETOKENIZED = "D"
TOKENIZED = "H"  # as the model wrote it: Moses tokens, BPE pieces


@dataclass(frozen=True)
class Generation:
    subset: str
    source_lang: str
    target_lang: str
    beam: int
    max_len_b: int
    batch_size: int
    bpe_codes: Optional[Path]  # None: the data has no BPE
    # None: no replacement; "": copy source words; else a dictionary file
    replace_unk: Optional[str] = None


def generate_command(checkpoint: Path, data_bin: Path, generation: Generation) -> List[str]:
    """fairseq-generate from the Python running this, so from the same environment. Its D- lines
    are detokenized by the classes the data was prepared with: BPE pieces joined, then Moses.
    checkpoint: one, or an ensemble written fairseq's way, a.pt:b.pt. Every test sentence is
    translated: fairseq-generate would leave out the last batch unless its size is a multiple of
    --required-batch-size-multiple (fairseq issue #5036)."""
    command = [
        sys.executable,
        "-m",
        "fairseq_cli.generate",
        str(data_bin),
        "--user-dir",
        str(PLUGIN),
        "--path",
        str(checkpoint),
        "--gen-subset",
        generation.subset,
        "--source-lang",
        generation.source_lang,
        "--target-lang",
        generation.target_lang,
        "--beam",
        str(generation.beam),
        "--max-len-b",
        str(generation.max_len_b),
        "--batch-size",
        str(generation.batch_size),
        "--required-batch-size-multiple",
        "1",
        "--tokenizer",
        "moses",
        "--log-interval",
        "10",
    ]
    if generation.replace_unk is not None:
        command += ["--task", SOURCE_WORDS_TASK, "--replace-unk"]
        command += [generation.replace_unk] if generation.replace_unk else []
    if generation.bpe_codes is not None:
        command += ["--bpe", "subword_nmt", "--bpe-codes", str(generation.bpe_codes)]
    return command


def run_generate(checkpoint: Path, data_bin: Path, generation: Generation, output: Path) -> None:
    """Write fairseq-generate's output to a file. Its log and progress lines (which it prints
    between the results) go on to stderr, so that a long run shows how far it is."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = generate_command(checkpoint, data_bin, generation)
    with output.open("w", encoding="utf-8") as results, subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    ) as process:
        for line in process.stdout:
            (results if RESULT_LINE.match(line) else sys.stderr).write(line)
    if process.returncode != 0:
        raise EvaluationError(
            f"fairseq-generate failed on {checkpoint} (exit status {process.returncode}); "
            "its message is above"
        )


def read_hypotheses(output: Path, sentences: int, kind: str = DETOKENIZED) -> List[str]:
    """The best hypothesis of each sentence, in the order of the test set: detokenized, or
    tokenized with its BPE pieces joined into words."""
    hypotheses = {}
    hypothesis_line = re.compile(rf"^{kind}-(\d+)\t[^\t]*\t(.*)$")
    for line in output.read_text(encoding="utf-8").splitlines():
        match = hypothesis_line.match(line)
        if match:
            text = match.group(2)
            hypotheses.setdefault(
                int(match.group(1)),
                data_utils.post_process(text, "subword_nmt") if kind == TOKENIZED else text,
            )
    missing = sorted(set(range(sentences)) - set(hypotheses))
    if missing:
        raise EvaluationError(
            f"{output} has no hypothesis for {len(missing)} of the {sentences} test sentences "
            f"(first: {missing[0]}): rerun the evaluation"
        )
    return [hypotheses[index] for index in range(sentences)]
