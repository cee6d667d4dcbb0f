"""fairseq's ``--bpe subword_nmt``, its codes file read as UTF-8 whatever the locale.

fairseq's SubwordNMTBPE opens the codes through subword-nmt's command-line parser (an
``argparse.FileType('r')``), so in the locale's encoding: under a Latin-1 locale every merge of a
non-ASCII letter is misread (``è`` becomes ``Ã¨``) and words are split into other pieces, some of
them ``<unk>``; under ``LC_ALL=C`` without Python's UTF-8 mode the codes do not load at all
(UnicodeDecodeError). bahdanau-prepare-data writes the codes in UTF-8 (subword-nmt's own
command-line tool reads them so too). The same class segments the training text
(bahdanau_tools/data/bpe.py) and the text to translate: the plugin's task builds it for
fairseq-interactive and fairseq-generate, and the hub interface for itself and bahdanau-serve.

It also segments a line into the words that fairseq then reads its pieces as: subword-nmt splits
words at spaces alone, so a tab, a no-break space or any other whitespace between two words (text
given without ``--tokenizer moses``, which turns them into spaces) was segmented inside one word,
``red<TAB>cat`` into ``re@@ d@@ <TAB>@@ ca@@ t``, which fairseq, splitting at any whitespace, read
as ``re@@ d@@ @@ ca@@ t``: the two words as one, around an ``<unk>``.
"""

import contextlib
import io
import os
import re
import reprlib
from argparse import Namespace
from typing import Optional
from urllib.parse import urlparse

from fairseq import file_utils
from fairseq.data import Dictionary, encoders
from fairseq.data.encoders.subword_nmt_bpe import SubwordNMTBPE, SubwordNMTBPEConfig
from fairseq.dataclass.utils import merge_with_parent
from fairseq.tokenizer import tokenize_line
from omegaconf import MISSING, DictConfig

from .errors import ConfigurationError, MissingPathError

NAME = "subword_nmt"  # fairseq's name for it: --bpe subword_nmt
# the first line that subword-nmt writes to stderr before it exits, refusing a line of the codes
INVALID_LINE = re.compile(r"Error: invalid line (\d+) in BPE codes file: (.*)")
GIVE_CODES = (
    "give the codes the data was segmented with (bahdanau-prepare-data writes OUT/bpe.codes)"
)


class SubwordNMTBPEReadInUTF8(SubwordNMTBPE):
    """fairseq's SubwordNMTBPE (separator ``@@``, no vocabulary filter, no glossaries), its codes
    read as UTF-8."""

    def __init__(self, cfg: SubwordNMTBPEConfig):
        codes = given_codes(cfg)
        if codes is None:
            raise ConfigurationError(
                "--bpe subword_nmt without --bpe-codes (from_pretrained's bpe_codes=): "
                + GIVE_CODES
            )
        from subword_nmt import apply_bpe  # as fairseq imports it: only where --bpe asks for it

        self.bpe = read_codes(apply_bpe, codes, cfg.bpe_separator)
        self.bpe_symbol = cfg.bpe_separator + " "

    def encode(self, x: str) -> str:
        """x's words, split at any whitespace as fairseq reads a line (tokenize_line), each
        segmented into pieces: subword-nmt's own splitting, at spaces alone, would segment two
        words with a tab between them as one."""
        return self.bpe.process_line(" ".join(tokenize_line(x)))


def given_codes(cfg) -> Optional[str]:
    """The codes cfg names, None where none were given: a configuration then holds omegaconf's
    mandatory value, which fails in a MissingMandatoryValue of several lines when read (its get
    is None), a SubwordNMTBPEConfig made from a Namespace the '???' itself, or None."""
    codes = cfg.get("bpe_codes") if isinstance(cfg, DictConfig) else cfg.bpe_codes
    return None if codes == MISSING else codes


def read_codes(apply_bpe, path: str, separator: str):
    """subword-nmt's BPE of the codes file, read as UTF-8. A file that is not one (the training
    text, a data-bin's dictionary, or a binary file, given for the codes) is a ConfigurationError
    of one line: subword-nmt writes why to stderr and exits the process, a Python program that
    loads the hub included, takes a dictionary's lines for merges, and bytes that are not UTF-8
    fail in a traceback."""
    not_codes = f"--bpe-codes {path} is not a subword-nmt codes file"
    try:
        with open(codes_file(path), encoding="utf-8") as codes:
            text = codes.read()
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"{not_codes}: it is not UTF-8 text (byte {error.object[error.start]:#04x}); "
            f"{GIVE_CODES}"
        ) from None
    if is_a_fairseq_dictionary(text):
        raise ConfigurationError(
            f"{not_codes}: it is a fairseq dictionary (a word and its count a line, as a "
            f"data-bin's dict.*.txt), not merges of two units; {GIVE_CODES}"
        )
    why = io.StringIO()
    try:
        with contextlib.redirect_stderr(why):
            return apply_bpe.BPE(io.StringIO(text), separator=separator)
    except SystemExit:
        line, refused = INVALID_LINE.match(why.getvalue()).groups()
        raise ConfigurationError(
            f"{not_codes}: its line {line}, {reprlib.repr(refused)}, is not a merge of two units "
            f"separated by a space; {GIVE_CODES}"
        ) from None


def is_a_fairseq_dictionary(text: str) -> bool:
    """Whether fairseq reads text as a dictionary: every line a word and its count (``a 1699``),
    maybe ``#fairseq:overwrite`` after it. subword-nmt reads such a line as a merge of the word
    with a unit '1699' that no word holds, and segments every word into its letters without a
    word. Codes never read so: subword-nmt writes '#version: 0.2' first, which has no count, and
    codes learned from text (older ones lack that line) are not all merges with a number, their
    merges that end a word least ('e s</w>')."""
    if not text.strip():
        return False  # an empty file: subword-nmt refuses its empty line itself
    try:
        Dictionary.load(io.StringIO(text))
    except (ValueError, RuntimeError):  # a line without a count; a word given twice
        return False
    return True


def codes_file(path: str) -> str:
    """The file to read the codes from, a URL's downloaded by fairseq's cached_path. A local path
    that is a folder or is not there is a MissingPathError of one line: open failed on a folder in
    an IsADirectoryError traceback, and cached_path on a missing file in 'file F not found',
    neither saying what to give."""
    if os.path.isdir(path):
        # bahdanau-prepare-data's OUT given for OUT/bpe.codes
        inside = os.path.join(path, "bpe.codes")
        raise MissingPathError(
            f"--bpe-codes {path} is a folder, not a codes file: "
            + (f"give the codes in it, {inside}" if os.path.isfile(inside) else GIVE_CODES)
        )
    if not urlparse(path).scheme and not os.path.exists(path):  # cached_path's local file
        raise MissingPathError(
            f"--bpe-codes {path} not found ({os.path.abspath(path)} does not exist): {GIVE_CODES}"
        )
    return file_utils.cached_path(path)


def build_bpe(cfg):
    """fairseq's encoders.build_bpe(cfg), with --bpe subword_nmt's codes read as UTF-8; cfg is what
    fairseq's tools and hub pass it (a DictConfig, a Namespace or the name alone)."""
    if isinstance(cfg, DictConfig):
        name = cfg.get("_name")
        config = merge_with_parent(SubwordNMTBPEConfig(), cfg) if name == NAME else None
    elif isinstance(cfg, Namespace):
        name = getattr(cfg, "bpe", None)
        config = SubwordNMTBPEConfig.from_namespace(cfg) if name == NAME else None
    else:
        name, config = cfg, SubwordNMTBPEConfig()
    if name != NAME:
        return encoders.build_bpe(cfg)
    return SubwordNMTBPEReadInUTF8(config)
