"""Joint BPE: learned with subword-nmt, applied with fairseq's own `--bpe subword_nmt` class, its
codes read as UTF-8 as the plugin reads them at translation (bahdanau_plugin/subword_nmt_codes.py).
"""

import functools
from collections import Counter
from pathlib import Path
from typing import List, Sequence

from fairseq.data.encoders.subword_nmt_bpe import SubwordNMTBPEConfig
from subword_nmt import learn_bpe

from bahdanau_plugin.subword_nmt_codes import SubwordNMTBPEReadInUTF8

from .digests import Version, file_version
from .parallel import map_line_chunks
from .progress import progress_bar
from .reading import lines


def learn_joint_bpe(texts: Sequence[Path], codes: Path, merges: int, workers: int) -> None:
    """Learn `merges` merge operations on the words of all texts together, as subword-nmt's
    learn-joint-bpe-and-vocab does, without its vocabulary files: fairseq never reads them.

    The words are counted by subword-nmt's own function, a chunk of lines at a time in this
    package's workers rather than in the pool subword-nmt would start: those workers leave Ctrl+C
    to the main process (parallel.py), and leave no temporary files behind when it comes."""
    words = Counter()
    for path in texts:
        for counts in map_line_chunks(path, learn_bpe.get_vocabulary, workers):
            words.update(counts)
    with codes.open("w", encoding="utf-8") as out:
        learn_bpe.learn_bpe(
            [f"{word} {count}" for word, count in words.items()], out, merges, is_dict=True
        )


def learned_merges(codes: Path) -> int:
    """The merge operations of a codes file: its lines, less subword-nmt's header (#version)."""
    with codes.open(encoding="utf-8") as lines:
        return sum(1 for _ in lines) - 1


@functools.lru_cache(maxsize=None)
def subword_nmt_bpe(codes: str, version: Version) -> SubwordNMTBPEReadInUTF8:
    """fairseq's `--bpe subword_nmt --bpe-codes codes`, so training text is segmented exactly like
    the input of fairseq-interactive (separator `@@`, no vocabulary filter). Loaded once per
    process and per version of the file (digests.py: its modification time alone would keep
    other codes copied over it with `cp -p`)."""
    return SubwordNMTBPEReadInUTF8(SubwordNMTBPEConfig(bpe_codes=codes))


def segment_lines(lines: List[str], codes: str) -> List[str]:
    bpe = subword_nmt_bpe(codes, file_version(Path(codes)))
    return [bpe.encode(line) for line in lines]


def segment_file(source: Path, destination: Path, codes: Path, workers: int) -> None:
    """Write source's lines segmented with codes to destination, with a progress bar: segmenting
    the paper's 12 million pairs takes minutes a side, which passed without a word."""
    segment = functools.partial(segment_lines, codes=str(codes))
    total = sum(1 for _ in lines(source))
    with destination.open("w", encoding="utf-8", newline="\n") as out, progress_bar(
        f"segmenting {source.name}", total, " lines"
    ) as progress:
        for segmented in map_line_chunks(source, segment, workers):
            out.writelines(line + "\n" for line in segmented)
            progress.update(len(segmented))
