"""fairseq-generate (beam search) as a subprocess, and the hypotheses it printed: detokenized (its
D- lines) and tokenized (its H- lines, BPE removed)."""

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional

from fairseq.data import data_utils
from fairseq.tasks.translation import TranslationConfig

import bahdanau_plugin
from bahdanau_plugin.tasks.translation_with_source_words import NAME as SOURCE_WORDS_TASK

from ..errors import EvaluationError

PLUGIN = Path(bahdanau_plugin.__file__).parent  # the folder --user-dir takes
RESULT_LINE = re.compile(r"^[STHDPA]-\d+\t")  # fairseq-generate's per-sentence lines
SOURCE_LINE = re.compile(r"^S-\d+\t")  # one per sentence translated
# fairseq-generate's own BLEU (of the tokens it prints: BPE pieces on BPE data) and its warning
# that it is so: the tool reports BLEU its own way, so both stay in the file, off the terminal
FAIRSEQ_BLEU_LINE = re.compile(r"^Generate \S+ with beam=\d+: |.*fairseq_cli\.generate.*BLEU score")
# --unkpen, subtracted from the log-probability of <unk> at every step: infinite makes it -inf,
# as fairseq makes that of padding, so that no hypothesis can hold <unk>
NEVER_UNK = "inf"
PROGRESS_SECONDS = 10  # a progress line at most this often, and one at the end
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
    # fairseq's length penalty: a finished hypothesis is ranked by its summed log-probability
    # divided by its length to this power (0: the sum, GroundHog's default; 1: per token, fairseq's)
    lenpen: float
    batch_size: int
    bpe_codes: Optional[Path]  # None: the data has no BPE
    # None: no replacement; "": copy source words; else a dictionary file
    replace_unk: Optional[str] = None
    # True: <unk> is never generated, as for the paper's No UNK column (Table 1's footnote)
    unk_disallowed: bool = False
    # fairseq's --max-source-positions and --max-target-positions (max_positions); None: its own
    max_positions: Optional[int] = None
    # fairseq's --user-dir: one's own folder, which registers the model and imports the plugin;
    # None: the plugin's
    user_dir: Optional[Path] = None
    # fairseq's --dataset-impl: "raw" where the split is text (fairseq-preprocess --dataset-impl
    # raw), which fairseq-generate finds only when told; None: binaries, fairseq's default
    dataset_impl: Optional[str] = None


def max_positions(longest_sentence: int) -> int:
    """The --max-source-positions and --max-target-positions under which every sentence of a split
    whose longest has this many tokens is translated. fairseq's translation task stops at one over
    them, 1,024 tokens by default ("Size of sample #N is invalid", in a traceback), though the
    models take any length; its default stays where no sentence is over it."""
    return max(longest_sentence, TranslationConfig.max_source_positions)


def generate_command(checkpoint: Path, data_bin: Path, generation: Generation) -> List[str]:
    """fairseq-generate from the Python running this, so from the same environment. Its D- lines
    are detokenized by the classes the data was prepared with: BPE pieces joined, then Moses.
    checkpoint: one, or an ensemble written fairseq's way, a.pt:b.pt. Every test sentence is
    translated: fairseq-generate would leave out the last batch unless its size is a multiple of
    --required-batch-size-multiple (fairseq issue #5036). The plugin's task, with or without
    --replace-unk, so that the option changes nothing but the <unk> of the translations: it
    translates an empty source as empty, where fairseq's translation task makes a sentence up."""
    command = [
        sys.executable,
        "-m",
        "fairseq_cli.generate",
        str(data_bin),
        "--user-dir",
        str(generation.user_dir or PLUGIN),
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
        "--lenpen",
        str(generation.lenpen),
        "--batch-size",
        str(generation.batch_size),
        "--required-batch-size-multiple",
        "1",
        "--tokenizer",
        "moses",
        "--task",
        SOURCE_WORDS_TASK,
    ]
    if generation.replace_unk is not None:
        command += ["--replace-unk"] + ([generation.replace_unk] if generation.replace_unk else [])
    if generation.unk_disallowed:
        command += ["--unkpen", NEVER_UNK]
    if generation.dataset_impl is not None:
        command += ["--dataset-impl", generation.dataset_impl]
    if generation.bpe_codes is not None:
        command += ["--bpe", "subword_nmt", "--bpe-codes", str(generation.bpe_codes)]
    if generation.max_positions is not None:
        positions = str(generation.max_positions)
        command += ["--max-source-positions", positions, "--max-target-positions", positions]
    return command


class Progress:
    """Lines on stderr that say how many sentences of the test set a model has translated: at most
    one every PROGRESS_SECONDS as its translations come, and one at the end."""

    def __init__(self, name: str, sentences: int, clock: Callable[[], float] = time.monotonic):
        self.name, self.sentences, self.clock = name, sentences, clock
        self.translated = self.shown = 0
        self.start = self.printed = clock()

    def sentence_translated(self) -> None:
        self.translated += 1
        if self.clock() - self.printed >= PROGRESS_SECONDS:
            self.print()

    def finished(self) -> None:
        if self.shown != self.translated:
            self.print()

    def print(self) -> None:
        self.printed, self.shown = self.clock(), self.translated
        print(
            f"{self.name}: {self.translated:,} of {self.sentences:,} sentences translated, "
            f"{self.printed - self.start:.0f} s",
            file=sys.stderr,
            flush=True,
        )


def run_generate(
    checkpoint: Path, data_bin: Path, generation: Generation, output: Path, progress: Progress
) -> None:
    """Write fairseq-generate's output to a file, and say how far it is (``progress``) as its
    translations come: it prints each batch's as soon as they are made (unbuffered). Its log
    (warnings and errors only: LOGLEVEL, unless set) comes through the same pipe, and its lines
    other than the results and its own BLEU go on to stderr."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = generate_command(checkpoint, data_bin, generation)
    with output.open("w", encoding="utf-8") as results, subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        encoding="utf-8",
        env={
            "LOGLEVEL": "WARNING",
            **os.environ,
            # UTF-8 whatever the locale: the pipe, and the files fairseq opens without saying
            # how (the BPE codes, through subword-nmt's command-line parser)
            "PYTHONUTF8": "1",
            "PYTHONIOENCODING": "utf-8",
            "PYTHONUNBUFFERED": "1",
        },
    ) as process:
        for line in process.stdout:
            kept = RESULT_LINE.match(line) or FAIRSEQ_BLEU_LINE.match(line)
            (results if kept else sys.stderr).write(line)
            if SOURCE_LINE.match(line):
                progress.sentence_translated()
    if process.returncode != 0:
        raise EvaluationError(
            f"fairseq-generate failed on {checkpoint} (exit status {process.returncode}); "
            "its message is above"
        )
    progress.finished()


def best_hypotheses(output: Path, kind: str) -> Dict[int, str]:
    """The best hypothesis of each sentence (the first fairseq-generate prints), by sentence id, as
    printed: detokenized (D-), or as the model wrote it (H-, BPE pieces)."""
    hypotheses = {}
    hypothesis_line = re.compile(rf"^{kind}-(\d+)\t[^\t]*\t(.*)$")
    for line in output.read_text(encoding="utf-8").splitlines():
        match = hypothesis_line.match(line)
        if match:
            hypotheses.setdefault(int(match.group(1)), match.group(2))
    return hypotheses


def cut_at_the_length_limit(output: Path, max_len_b: int) -> List[int]:
    """The sentences whose best translation has max_len_b tokens (BPE pieces): fairseq-generate
    ends a translation there, finished or not (--max-len-a is 0), so that these may be cut short."""
    return sorted(
        sentence
        for sentence, text in best_hypotheses(output, TOKENIZED).items()
        if len(text.split()) >= max_len_b
    )


def read_hypotheses(output: Path, sentences: int, kind: str = DETOKENIZED) -> List[str]:
    """The best hypothesis of each sentence, in the order of the test set: detokenized, or
    tokenized with its BPE pieces joined into words."""
    hypotheses = {
        sentence: data_utils.post_process(text, "subword_nmt") if kind == TOKENIZED else text
        for sentence, text in best_hypotheses(output, kind).items()
    }
    missing = sorted(set(range(sentences)) - set(hypotheses))
    if missing:
        raise EvaluationError(
            f"{output} has no hypothesis for {len(missing)} of the {sentences} test sentences "
            f"(first: {missing[0]}): rerun the evaluation"
        )
    return [hypotheses[index] for index in range(sentences)]
