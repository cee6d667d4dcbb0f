"""Unknown-word replacement from the soft alignment (Jean et al., 2015; Luong et al., 2015).

``--replace-unk [DICTIONARY]`` (with ``--task translation_with_source_words``) or ``replace_unk=``
(the hub interface): each ``<unk>`` of a translation becomes the source word its target position
attends to most (the j of the largest alpha_ij, as ``--print-alignment`` prints it), looked up in
the dictionary file when one is given and the word is in it, copied otherwise. It works on tokens
as binarized (words, or BPE units), before BPE removal and detokenization.

The words to copy are the real source words, where each tool still has them: fairseq-generate
reads them from the text the binaries were made from, ``DATA/SPLIT.SRC-TGT.SRC.txt``
(``source_text_path``; bahdanau-prepare-data writes it), since its binaries hold ``<unk>``;
fairseq-interactive and the hub interface give each input word outside the source dictionary an id
of its own past the models' vocabulary (``WordsPastVocabulary``), which the models read as
``<unk>``. The replacing words get ids past the target dictionary's vocabulary in the same way, so
a hypothesis' tokens hold them and fairseq's own post-processing prints them.
"""

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from fairseq import utils
from fairseq.data import Dictionary
from fairseq.sequence_scorer import SequenceScorer

from .errors import ConfigurationError
from .unicode_form import normalized

OPTION = "--replace-unk"
# What fairseq's parser stores for --replace-unk given without a dictionary file; the task's option
# stores the same.
NO_DICTIONARY = "@@ "
# The first line of the dictionaries bahdanau-unk-dictionary writes: the languages of the model it
# was made with, "#languages en->fr". Two words, as every line of fairseq's format, so that
# fairseq's own reader and the plugin's earlier versions read it as the entry of a word no text
# holds; a dictionary without it (one of an earlier version, or written by hand) is read as before.
LANGUAGES = "#languages"
DIRECTION = "->"

Languages = Tuple[str, str]  # (source, target)


def languages_line(source_lang: str, target_lang: str) -> str:
    return f"{LANGUAGES} {source_lang}{DIRECTION}{target_lang}"


def recorded_languages(fields: Sequence[str]) -> Optional[Languages]:
    """The languages a dictionary's first line records, if it is languages_line's."""
    if len(fields) != 2 or fields[0] != LANGUAGES or DIRECTION not in fields[1]:
        return None
    source, target = fields[1].split(DIRECTION, 1)
    return source, target


def check_direction(path: str, recorded: Languages, languages: Optional[Languages]) -> None:
    """A dictionary made for the other direction than the run translates (fr->en for en->fr)
    maps words of its target language to words of its source language: the source words that
    both languages spell alike (names, numbers, 'pain', 'chat') would have been replaced by the
    wrong language's words without a word of warning. languages: the run's (its --source-lang and
    --target-lang, or what fairseq read from the data-bin), checked before any model loads."""
    if languages is None or recorded == languages or recorded != languages[::-1]:
        return
    source, target = languages
    raise ConfigurationError(
        f"{OPTION} {path} is a dictionary for {target}{DIRECTION}{source} (its first line, "
        f"{languages_line(*recorded)}), the reverse of this run's {source}{DIRECTION}{target} "
        f"(--source-lang {source} --target-lang {target}): give one made for "
        f"{source}{DIRECTION}{target} (bahdanau-unk-dictionary with such a model), or the "
        f"languages the other way round if the model translates {target}{DIRECTION}{source}, or "
        f"{OPTION} alone to copy the source words"
    )


def source_text_path(data: Path, split: str, source_lang: str, target_lang: str) -> Path:
    """The text of a split's source side, tokens as binarized, beside its binaries. Not the name of
    fairseq's raw-text files, which fairseq would read instead of the binaries."""
    return Path(data) / f"{split}.{source_lang}-{target_lang}.{source_lang}.txt"


def load_word_dictionary(
    replace_unk: Optional[str], languages: Optional[Languages] = None
) -> Optional[Dict[str, str]]:
    """None without --replace-unk; {} without a dictionary file (source words are copied); else
    the file's "SOURCE_WORD TARGET_WORD" lines (fairseq's format), checked, and refused where its
    first line records the reverse of languages, the (source, target) the model translates."""
    if replace_unk is None:
        return None
    if replace_unk in ("", NO_DICTIONARY):
        return {}
    try:  # a byte-order mark at its start is not part of its first word
        with open(replace_unk, encoding="utf-8-sig") as lines:
            return _dictionary_entries(replace_unk, lines, languages)
    except FileNotFoundError:
        raise ConfigurationError(
            f"{OPTION} {replace_unk}: no such dictionary file; give an existing one, or "
            f"{OPTION} alone to copy the source words"
        ) from None
    except IsADirectoryError:
        raise ConfigurationError(f"{OPTION} {replace_unk} is a folder: give the file") from None
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"{OPTION} {replace_unk} is not UTF-8 text (byte {error.start + 1:,} is "
            f"0x{error.object[error.start]:02x}): convert it (iconv -f ITS-ENCODING -t utf-8)"
        ) from None


def _dictionary_entries(path: str, lines, languages: Optional[Languages]) -> Dict[str, str]:
    entries, first_line = {}, {}
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        recorded = recorded_languages(fields) if number == 1 else None
        if recorded is not None:
            check_direction(path, recorded, languages)
            continue
        if len(fields) != 2:
            raise ConfigurationError(
                f"{OPTION} {path}, line {number}: expected a source word and its translation "
                f"separated by a space, got {line.strip()!r}; fix or delete that line"
            )
        source, target = map(normalized, fields)  # in NFC, as the text it replaces in
        if source in entries:
            raise ConfigurationError(
                f"{OPTION} {path}, line {number}: {source!r} already has a translation on line "
                f"{first_line[source]}; keep one of the two lines"
            )
        entries[source], first_line[source] = target, number
    return entries


class WordsPastVocabulary:
    """Words a dictionary lacks, given ids past its vocabulary (the size the models were built
    with) until forgotten, so that the dictionary holds at most one input's words.

    A word spelt as one of its control symbols (``</s>``, ``<pad>``, ``<s>``, ``<unk>``, typed in
    the text) is a word it lacks too: fairseq's Dictionary reads it as the symbol itself, an end of
    sentence or padding in the middle of a source, which the models would translate without a
    word of warning. Here it is ``<unk>`` (``index``), and learnt it gets an id of its own whose
    symbol is its spelling, so that a translation can copy it (the symbol keeps its index)."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary
        self.vocabulary = len(dictionary)
        self.control_words: Dict[str, int] = {}  # learnt, the id of each

    def forget(self) -> None:
        for word in self.dictionary.symbols[self.vocabulary :]:
            if word not in self.control_words:
                del self.dictionary.indices[word]
        del self.dictionary.symbols[self.vocabulary :], self.dictionary.count[self.vocabulary :]
        self.control_words.clear()

    def learn(self, lines: Sequence[str]) -> None:
        """Forget the words learnt before, then give every word of lines an id."""
        self.forget()
        for line in lines:
            for word in line.split():
                self.id(word)

    def id(self, word: str) -> int:
        """word's id, one past the vocabulary where the dictionary lacks it."""
        if not self.spells_a_control_symbol(word):
            return self.dictionary.add_symbol(word, n=0)
        if word not in self.control_words:
            self.control_words[word] = len(self.dictionary.symbols)
            self.dictionary.symbols.append(word)
            self.dictionary.count.append(0)
        return self.control_words[word]

    def index(self, word: str) -> int:
        """word's id in a source, as the models' input reads it: its own where it was learnt, its
        entry in the dictionary, or <unk> (a word the dictionary lacks, or one spelt as a control
        symbol)."""
        if word in self.control_words:
            return self.control_words[word]
        if self.spells_a_control_symbol(word):
            return self.dictionary.unk()
        return self.dictionary.index(word)

    def spells_a_control_symbol(self, word: str) -> bool:
        """fairseq's Dictionary puts its control symbols first, nspecial of them."""
        return (
            self.dictionary.indices.get(word, self.dictionary.nspecial) < self.dictionary.nspecial
        )

    def as_models_read_it(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens with every id past the vocabulary turned into <unk>."""
        return tokens.masked_fill(tokens.ge(self.vocabulary), self.dictionary.unk())


def replaced_tokens(
    hypothesis: Dict[str, torch.Tensor],
    source_tokens: torch.Tensor,
    source_words: Sequence[str],
    target_words: WordsPastVocabulary,
    word_dictionary: Dict[str, str],
) -> torch.Tensor:
    """The hypothesis' tokens, each <unk> replaced by the id of the dictionary's translation of the
    source word it attends to most, or of that word itself.

    source_tokens: the source sentence as the hypothesis' attention (source x target) saw it,
    padding included; source_words: its real words, end of sentence and padding excluded."""
    attention = hypothesis.get("attention")
    if attention is None or attention.numel() == 0:
        raise ConfigurationError(
            f"{OPTION} needs the models' attention, and they returned none: "
            "translate with rnnsearch checkpoints"
        )
    dictionary = target_words.dictionary
    tokens = hypothesis["tokens"]
    # fairseq's hard alignment: for each target token, the source word of the largest alpha
    aligned = {
        target: source
        for source, target in utils.extract_hard_alignment(
            attention.t().float().cpu(),
            source_tokens.cpu(),
            tokens.cpu(),
            dictionary.pad(),
            dictionary.eos(),
        )
    }
    replaced = tokens.clone()
    for position, token in enumerate(tokens.tolist()):
        if token == dictionary.unk() and position in aligned:  # an empty source aligns nothing
            word = source_words[aligned[position]]
            replaced[position] = target_words.id(word_dictionary.get(word, word))
    return replaced


def text_mismatch(
    lines: Sequence[str], sentences: Sequence[torch.Tensor], dictionary: Dictionary, path: Path
) -> Optional[str]:
    """What keeps lines, the text at path, from being the text that sentences (ids, end of sentence
    included) were binarized from with dictionary, if anything: another number of lines, of tokens
    on a line, or other words. Each word must binarize to its sentence's token as
    fairseq-preprocess binarized it (a word the dictionary lacks to <unk>): a text of the same
    lengths but other words (a cased text beside a split binarized anew lowercased) is not the
    binaries' either."""
    if len(lines) != len(sentences):
        return f"{path} has {len(lines)} lines but the split has {len(sentences)} sentences"
    for number, (line, sentence) in enumerate(zip(lines, sentences)):
        tokens = len(sentence) - 1  # its end of sentence left out
        if len(line.split()) != tokens:
            return (
                f"line {number + 1} of {path} has {len(line.split())} tokens but sentence "
                f"{number} of the binarized split has {tokens}"
            )
        if not torch.equal(dictionary.encode_line(line, add_if_not_exist=False), sentence):
            return (
                f"line {number + 1} of {path} holds other words than sentence {number} of the "
                "binarized split"
            )
    return None


def check_source_text_there(path: Path) -> None:
    """fairseq-generate's replacement reads a split's source words from path (source_text_path):
    refused where it is missing, which bahdanau-evaluate checks before it translates anything."""
    if not path.is_file():
        raise ConfigurationError(
            f"{OPTION}: fairseq-generate reads the real source words from {path}, the text "
            "the binaries were made from (tokens as binarized, one sentence per line), and it "
            "is missing: write it there (bahdanau-prepare-data does for the direction it "
            "prepared; for the other, copy there its tok/ text of that side)"
        )


class SourceText:
    """fairseq-generate's source words: line N of the split's text holds sentence N, cut to its
    first `kept` words where --truncate-source cut the binarized sentence so."""

    def __init__(self, path: Path, kept: Optional[int] = None):
        check_source_text_there(path)
        self.path, self.kept = path, kept
        with path.open(encoding="utf-8") as text:  # lines as fairseq-preprocess reads them:
            self.lines = [line.rstrip("\n") for line in text]  # not at U+2028, as splitlines

    def check_binarized(self, sentences: Sequence[torch.Tensor], dictionary: Dictionary) -> None:
        """The text holds the words of the split's source side (sentences, as the task reads them:
        cut where --truncate-source cuts them), line by line. A text of other words, though of
        the same lengths (a cased text left beside a split binarized anew lowercased), would be
        copied into the translations without a word. Once per split loaded."""
        kept = [" ".join(line.split()[: self.kept]) for line in self.lines]
        mismatch = text_mismatch(kept, sentences, dictionary, self.path)
        if mismatch is not None:
            raise ConfigurationError(
                f"{OPTION}: {mismatch}; that file must hold the text the binaries were made from: "
                "write it again from the text you binarized (bahdanau-prepare-data writes it)"
            )

    def words(self, sample, row: int, tokens: int) -> List[str]:
        """The words of a sample's sentence, as many as its tokens (check_binarized)."""
        return self.lines[sample["id"][row].item()].split()[: self.kept]


class DictionaryWords:
    """The source words of fairseq-interactive's and the hub's input: what each id stands for in
    the source dictionary, which WordsPastVocabulary taught the input's unknown words."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def words(self, sample, row: int, tokens: int) -> List[str]:
        ids = sample["net_input"]["src_tokens"][row].tolist()
        special = (self.dictionary.pad(), self.dictionary.eos())
        return [self.dictionary[i] for i in ids if i not in special]


def refuse_constraint_words_outside(
    target_words: WordsPastVocabulary, constraints: Optional[torch.Tensor]
) -> None:
    """fairseq-interactive reads each word of --constraints with the target dictionary, a word it
    lacks as <unk>, which the translation then writes where the word was asked for: replaced, that
    <unk> became the source word it attends to most, and the translation held a word that was
    not asked for in place of the one that was, without a word. constraints: fairseq's, a row a
    sentence: their number, then their ids, each constraint ended by 0 (<s>)."""
    if constraints is not None and constraints[:, 1:].eq(target_words.dictionary.unk()).any():
        raise ConfigurationError(
            f"a --constraints word is outside the target dictionary (or is <unk>): fairseq reads "
            f"it as <unk>, which the translation writes where the word is asked for, and {OPTION} "
            "would replace it by a source word: drop that word from the constraints, or drop "
            f"{OPTION} to see <unk> where it was asked for"
        )


class ReplacingGenerator:
    """fairseq's generator, then the replacement in every hypothesis' tokens."""

    def __init__(
        self,
        generator,
        source_words,
        source_vocabulary: WordsPastVocabulary,
        target_words: WordsPastVocabulary,
        word_dictionary: Dict[str, str],
    ):
        self.generator = generator
        self.source_words = source_words
        self.source_vocabulary = source_vocabulary
        self.target_words = target_words
        self.word_dictionary = word_dictionary

    def __getattr__(self, name):  # fairseq's tools read the generator's settings (symbols to strip)
        return getattr(self.generator, name)

    @torch.no_grad()
    def generate(self, models, sample, **kwargs):
        refuse_constraint_words_outside(self.target_words, kwargs.get("constraints"))
        source_tokens = sample["net_input"]["src_tokens"]
        as_read = self.source_vocabulary.as_models_read_it(source_tokens)
        net_input = {**sample["net_input"], "src_tokens": as_read}
        hypotheses = self.generator.generate(models, {**sample, "net_input": net_input}, **kwargs)
        dictionary = self.source_vocabulary.dictionary
        for row, sentence_hypotheses in enumerate(hypotheses):
            real = source_tokens[row].ne(dictionary.pad()) & source_tokens[row].ne(dictionary.eos())
            words = self.source_words.words(sample, row, int(real.sum()))
            for hypothesis in sentence_hypotheses:
                hypothesis["tokens"] = replaced_tokens(
                    self.attending_as_the_search(hypothesis),
                    source_tokens[row],
                    words,
                    self.target_words,
                    self.word_dictionary,
                )
        return hypotheses

    def attending_as_the_search(self, hypothesis: Dict[str, torch.Tensor]) -> Dict:
        """hypothesis with its attention source x target, as fairseq's search gives it. Its scorer
        of references (fairseq-generate --score-reference) gives the models' own, target x
        source: read as the search's, each <unk> of a reference was replaced by the word of
        another source position, not the one --print-alignment aligns it to."""
        attention = hypothesis.get("attention")
        if not isinstance(self.generator, SequenceScorer) or attention is None:
            return hypothesis
        return {**hypothesis, "attention": attention.t()}
