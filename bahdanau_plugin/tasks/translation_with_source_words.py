"""``--task translation_with_source_words``: fairseq's translation task, keeping the source as the
user wrote it, for fairseq-generate, fairseq-interactive and the hub interface.

fairseq's translation task reads a source sentence as dictionary ids: from then on a word outside
the dictionary is ``<unk>``, and a line of fairseq-interactive's input is a position in a batch.
This task keeps the words and the line numbers, for the two things that need them:

- ``--replace-unk [DICTIONARY]``: each ``<unk>`` of a translation becomes the real source word it
  attends to most, or its translation in DICTIONARY (unknown_words.py). The task owns the option
  (fairseq's own replacement needs raw text and misreads these models' alignments, fairseq issues
  #3533 and #1033): ``build_generator`` returns a generator whose hypotheses hold the replacing
  words, which fairseq's own post-processing prints; ``get_interactive_tokens_and_lengths`` gives
  fairseq-interactive's unknown words ids of their own; ``load_dataset`` finds fairseq-generate's
  words in the text beside the binaries.
- ``--skip-invalid-size-inputs-valid-test``: fairseq-interactive leaves out a line over
  ``--max-source-positions``; the task names it in one line on stderr (``filter_indices_by_size``).

A source word spelt as one of the dictionary's control symbols (``</s>``, ``<pad>``, ``<s>``,
``<unk>``) is read as a word the dictionary lacks, ``<unk>``, not as the symbol, which would end
or pad the source in its middle (``encode_source``, the hub's ``binarize`` too).

Raw text is read as bahdanau-prepare-data wrote the training text: each line of
fairseq-interactive's input in one Unicode form, NFC (``get_interactive_tokens_and_lengths``,
unicode_form.py), and ``--bpe subword_nmt``'s codes as UTF-8 whatever the locale, each line's
words split at any whitespace, as fairseq reads the pieces (``build_bpe``, subword_nmt_codes.py).

An empty or blank line is translated as empty (``inference_step``), as Marian and Sockeye
translate it, where the models would make a sentence up from the end of sentence alone; so is a
line of format characters alone (U+200B ZERO WIDTH SPACE, U+FEFF), which holds no word either
(``encode_source``: unicode_form.holds_a_word, the rule by which bahdanau-serve refuses it).

Everything else is fairseq's translation task.
"""

import copy
import sys
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import MODEL_REGISTRY
from fairseq.tasks import register_task
from fairseq.sequence_scorer import SequenceScorer
from fairseq.tasks.translation import TranslationConfig, TranslationTask
from fairseq.token_generation_constraints import unpack_constraints
from fairseq.tokenizer import tokenize_line
from omegaconf import open_dict

from .. import errors, subword_nmt_codes, unknown_words
from ..errors import ConfigurationError
from ..unicode_form import holds_a_word, normalized

NAME = "translation_with_source_words"
REPLACE_UNK_HELP = (
    "replace each <unk> of a translation by the source word it attends to most, translated by "
    "DICTIONARY (SOURCE TARGET lines) when it holds the word"
)


@dataclass
class TranslationWithSourceWordsConfig(TranslationConfig):
    # --replace-unk on the command line (add_args); None: no replacement
    unk_replacement: Optional[str] = field(default=None, metadata={"help": REPLACE_UNK_HELP})


def scores_references(generator) -> bool:
    """Whether generator is fairseq's scorer of references (fairseq-generate --score-reference),
    alone or under the unknown-word replacement (its ``generator``): it writes no translation,
    and scores every reference, that of a source without a word too."""
    return isinstance(getattr(generator, "generator", generator), SequenceScorer)


def refuse_constraints_cut_at_a_begin_symbol(constraints: Optional[torch.Tensor]) -> None:
    """fairseq-interactive reads each --constraints word with the target dictionary, <s> as its
    begin symbol, whose id (0) fairseq's packed constraints also end each constraint with: a
    constraint holding <s> was cut there by the search, which wrote its first words alone (or
    none, <s> first) and dropped the rest, without a word. constraints: fairseq's packed rows,
    read as its search reads them (unpack_constraints)."""
    for row in [] if constraints is None else constraints:
        read = unpack_constraints(row)
        if any(len(constraint) == 0 for constraint in read) or sum(map(len, read)) < int(
            row[1:].count_nonzero()
        ):
            raise ConfigurationError(
                "a --constraints word is <s>, with which fairseq ends each constraint: the "
                "search would write the words before it alone and drop the rest of the "
                "constraint: drop <s> from it (a tab separates two constraints)"
            )


@register_task(NAME, dataclass=TranslationWithSourceWordsConfig)
class TranslationWithSourceWordsTask(TranslationTask):
    cfg: TranslationWithSourceWordsConfig

    @classmethod
    def add_args(cls, parser):
        gen_parser_from_dataclass(parser, TranslationConfig())
        # fairseq-generate and fairseq-interactive already have --replace-unk, which
        # fairseq-generate refuses on binarized data before any task is set up: the task takes the
        # option over (conflict_handler="resolve" removes fairseq's), so that it reaches the task.
        owned = parser.add_argument_group("unknown-word replacement", conflict_handler="resolve")
        owned.add_argument(
            unknown_words.OPTION,
            dest="unk_replacement",
            nargs="?",
            const=unknown_words.NO_DICTIONARY,
            metavar="DICTIONARY",
            help=REPLACE_UNK_HELP,
        )

    @classmethod
    def in_place_of(cls, task: TranslationTask, unk_replacement: Optional[str]):
        """This task, replacing unknown words as unk_replacement says (None: not at all), in place
        of a translation task already set up (the hub interface's), with its configuration and
        dictionaries."""
        cfg = copy.deepcopy(task.cfg)
        with open_dict(cfg):
            cfg._name, cfg.unk_replacement = NAME, unk_replacement
        return cls(cfg, task.source_dictionary, task.target_dictionary)

    def __init__(self, cfg, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self.word_dictionary = unknown_words.load_word_dictionary(
            cfg.unk_replacement, (cfg.source_lang, cfg.target_lang)
        )
        self.source_words_past = unknown_words.WordsPastVocabulary(src_dict)
        self.target_words_past = unknown_words.WordsPastVocabulary(tgt_dict)
        self.source_text = None  # of the split fairseq-generate translates, once loaded
        self.lines_read = 0  # of fairseq-interactive's input
        self.first_line = 0  # of the lines it is translating now

    @property
    def replaces_unknown_words(self) -> bool:
        return self.word_dictionary is not None

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        if self.replaces_unknown_words:
            data = utils.split_paths(self.cfg.data)[0]
            path = unknown_words.source_text_path(
                data, split, self.cfg.source_lang, self.cfg.target_lang
            )
            # fairseq's --truncate-source keeps a sentence's first max_source_positions - 1 tokens
            kept = self.cfg.max_source_positions - 1 if self.cfg.truncate_source else None
            self.source_text = unknown_words.SourceText(path, kept)
            source = self.datasets[split].src
            self.source_text.check_binarized(
                [source[index] for index in range(len(source))], self.source_dictionary
            )

    def keep_source_words(self, lines):
        """The words of lines (tokenized, BPE applied) that the source dictionary lacks get ids of
        their own until the next call, so that a translation can copy them."""
        self.source_words_past.learn(lines)

    def get_interactive_tokens_and_lengths(self, lines, encode_fn):
        self.first_line, self.lines_read = self.lines_read, self.lines_read + len(lines)
        encoded = [encode_fn(normalized(line)) for line in lines]
        if self.replaces_unknown_words:
            self.keep_source_words(encoded)
        tokens = [self.encode_source(line) for line in encoded]
        return tokens, [sentence.numel() for sentence in tokens]

    def encode_source(self, line: str) -> torch.Tensor:
        """line (tokenized, BPE applied) as source ids, as fairseq's Dictionary.encode_line reads
        it, except a word spelt as one of the dictionary's control symbols (</s>, <pad>, <s>,
        <unk>): typed in the text, it is a word the dictionary lacks, <unk> (kept for --replace-unk
        as any other), not an end of sentence or padding in the middle of the source
        (WordsPastVocabulary.index). A line without a word (format characters alone, such as
        U+200B ZERO WIDTH SPACE or U+FEFF: holds_a_word, the rule by which bahdanau-serve refuses
        it as it refuses an empty text) is an empty line, translated as empty (inference_step),
        not as a sentence of <unk>. fairseq-interactive's lines and the hub's sentences, and so
        bahdanau-serve's, are read here."""
        words = tokenize_line(line)
        if not holds_a_word(words):
            words = []
        return torch.tensor(
            [*map(self.source_words_past.index, words), self.source_dictionary.eos()]
        )

    def build_bpe(self, args):
        return subword_nmt_codes.build_bpe(args)

    def check_attention(self, models, option: str = unknown_words.OPTION) -> None:
        """Every model of the ensemble attends as RNNsearch does: fairseq averages their
        attention, and option reads it."""
        for model in models:
            attends = getattr(model, "has_attention", None)  # None: not one of this plugin's
            if attends is None:
                raise ConfigurationError(
                    f"{option} reads the attention of rnnsearch models, and "
                    f"{registered_name(model)} is not one (fairseq's lstm gives its attention at "
                    "source positions that its padding shifted): translate with rnnsearch "
                    "checkpoints only"
                )
            if not attends:
                raise ConfigurationError(
                    f"{option} reads the source word a translation attends to, and "
                    f"{registered_name(model)} has no attention: drop the option, or "
                    "translate with rnnsearch checkpoints only"
                )

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None, **kw):
        # The words the previous generator's translations used: the beam search sizes itself by
        # the target dictionary, which must be the models' vocabulary again.
        self.target_words_past.forget()
        if getattr(args, "print_alignment", None):
            self.check_attention(models, "--print-alignment")
        generator = super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs, **kw)
        if not self.replaces_unknown_words:
            return generator
        self.check_attention(models)
        return unknown_words.ReplacingGenerator(
            generator,
            self.source_text or unknown_words.DictionaryWords(self.source_dictionary),
            self.source_words_past,
            self.target_words_past,
            self.word_dictionary,
        )

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's translations, except that a source without a word, an empty or blank line
        (the end of sentence alone), gets an empty one. A batch of such sources alone, as
        fairseq-interactive makes of each line it reads, is not generated at all. A --constraints
        word <s> is refused first (refuse_constraints_cut_at_a_begin_symbol). References scored
        (--score-reference) are all fairseq's: an empty source's reference is scored, not replaced
        by an empty line."""
        refuse_constraints_cut_at_a_begin_symbol(constraints)
        sources, symbols = sample["net_input"]["src_tokens"], self.source_dictionary
        has_words = ((sources != symbols.pad()) & (sources != symbols.eos())).any(dim=1).tolist()
        if scores_references(generator):
            has_words = [True] * len(has_words)
        translations = (
            super().inference_step(generator, models, sample, prefix_tokens, constraints)
            if any(has_words)
            else [None] * len(has_words)
        )
        attends = all(getattr(model, "has_attention", True) for model in models)
        return [
            hypotheses if words else [self.empty_translation(source, attends)]
            for hypotheses, words, source in zip(translations, has_words, sources)
        ]

    def empty_translation(self, source: torch.Tensor, attends: bool) -> dict:
        """A hypothesis as fairseq's generator makes one: the end of sentence alone, with
        probability 1, attending (where the models attend) to the source's end of sentence."""
        end = (source == self.source_dictionary.eos()).float().unsqueeze(1)  # source x target
        return {
            "tokens": torch.tensor([self.target_dictionary.eos()], device=source.device),
            "score": torch.tensor(0.0, device=source.device),
            "attention": end if attends else torch.empty(0),
            "alignment": torch.empty(0),
            "positional_scores": torch.zeros(1, device=source.device),
        }

    def filter_indices_by_size(
        self, indices, dataset, max_positions=None, ignore_invalid_inputs=False
    ):
        kept = super().filter_indices_by_size(
            indices, dataset, max_positions, ignore_invalid_inputs
        )
        if getattr(dataset, "tgt", True) is None:  # sentences to translate, not a split
            limit = max_positions[0] if isinstance(max_positions, tuple) else max_positions
            for index in sorted(set(indices.tolist()) - set(kept.tolist())):
                print(
                    f"warning: sentence {self.first_line + index} is not translated: its "
                    f"{dataset.src_sizes[index]:,} tokens (end of sentence included) are over "
                    f"--max-source-positions {limit}; raise that option to translate it",
                    file=sys.stderr,
                    flush=True,
                )
        return kept


def registered_name(model) -> str:
    """The name a model is registered under (--arch's family: rnnencdec, say)."""
    names = [name for name, model_class in MODEL_REGISTRY.items() if model_class is type(model)]
    return names[0] if names else type(model).__name__


def replace_unk_without_the_task(error: BaseException) -> Optional[str]:
    """fairseq-generate's own --replace-unk, given without this task, stops at an assertion."""
    if isinstance(error, AssertionError) and "--replace-unk requires a raw text" in str(error):
        return (
            f"{unknown_words.OPTION} needs --task {NAME} (fairseq's own replacement reads raw "
            "text only): add that option"
        )
    return None


errors.EXPLANATIONS.append(replace_unk_without_the_task)
