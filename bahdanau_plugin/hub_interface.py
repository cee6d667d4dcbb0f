"""The hub interface of RNNsearch and RNNencdec: what their ``from_pretrained`` returns.

fairseq's GeneratorHubInterface (``translate``, ``encode``, ``generate``, ``decode``), which loads
fairseq's ``replace_unk=`` dictionary and never uses it. This one translates through
``--task translation_with_source_words``, which translates an empty line as empty. Made with
``replace_unk=`` ("" to copy source words, or a dictionary file), the task's generator replaces
each ``<unk>`` by the source word it attends to most: ``translate()`` returns the replaced text and
``generate()`` hypotheses whose tokens hold the replacing words. The generation options of a call
are checked as fairseq-generate's (``check_options``): ``replace_unk`` or a misspelt option, which
fairseq would set and never read, is refused, and so is ``score()`` (``score_reference``), which
fairseq's hub has for language models only, and ``prefix_size``, which only fairseq-generate reads
(from its references), and ``constraints`` without the constraints themselves (or the
reverse). So is a sentence over max_source_positions, which
fairseq would leave out of the results under ``skip_invalid_size_inputs``, and
``print_alignment='soft'`` with ``verbose=True``, whose log fairseq writes as hard alignments only.
The options given to ``from_pretrained`` are checked too (``check_loading_options``): fairseq
drops a misspelt one, and ``beam``, which every call replaces by its own, without a word, and
fails in a KeyError on a tokenizer or BPE it does not register (``tokenizer="mosess"``).

A word spelt as one of the dictionary's control symbols (``</s>``, ``<pad>``, ``<s>``, ``<unk>``)
is binarized as a word the dictionary lacks, ``<unk>``, as fairseq-interactive reads it with the
task (``binarize``), and so bahdanau-serve, which binarizes through it.

Text is a str, or a list of them: bytes, or a sentence of another type, are refused in one line
(``check_sentences_given``, ``check_text``), where fairseq read bytes as a list of numbers. Raw
text is read as bahdanau-prepare-data wrote the training text, whatever the locale: in one
Unicode form, NFC (``tokenize``, the first step of ``encode`` and ``translate``: unicode_form.py),
and segmented with ``--bpe subword_nmt``'s codes read as UTF-8 (subword_nmt_codes.py).
"""

import difflib
import reprlib
import warnings
from collections.abc import Iterable
from typing import Optional, Tuple

import torch
from fairseq.hub_utils import GeneratorHubInterface
from fairseq.registry import REGISTRIES
from omegaconf import DictConfig

from . import subword_nmt_codes
from .errors import ConfigurationError
from .models.inference_setup import (
    refuse_a_language_model_nothing_reads,
    refuse_a_prefix_nothing_reads,
    refuse_what_fairseqs_search_cannot_do,
)
from .tasks import TranslationWithSourceWordsTask
from .unicode_form import normalized


# GeneratorHubInterface.generate's own arguments, not generation options
CALL_ARGUMENTS = ("skip_invalid_size_inputs", "inference_step_args", "prefix_allowed_tokens_fn")
# from_pretrained's options that name one of fairseq's registered classes: --tokenizer, --bpe
REGISTERED_OPTIONS = ("tokenizer", "bpe")
BYTES = (bytes, bytearray, memoryview)  # iterable, as numbers: never the sentences themselves
# fairseq's from_pretrained reads it itself: generation options, set on the configuration
GENERATION_ARGS = "generation_args"
# torch's warning at each search on a machine without a GPU: fairseq's data loader asks for pinned
# memory whatever the device, and no option of fairseq's reaches it
PINNED_MEMORY_WITHOUT_A_GPU = r"'pin_memory' argument is set as true but no accelerator is found"


def check_loading_options(cfg, options: dict) -> None:
    """The options given to from_pretrained, refused where fairseq would take them without a word
    and nothing would read them: beam, which translate(), sample() and generate() replace by their
    own argument's default, and a name that no block of the loaded configuration holds (a misspelt
    one, or a tokenizer's or BPE's option without it), which fairseq drops."""
    given = {**options, **(options.get(GENERATION_ARGS) or {})}
    check_registered_names(given)
    if "beam" in given:
        raise ConfigurationError(
            f"from_pretrained(beam={given['beam']!r}): the beam is chosen per call, not when the "
            "model is loaded: translate() searches with beam=5, sample() with 1 and generate() "
            "with 5 whatever from_pretrained was given; give translate(..., beam=N)"
        )
    unknown = unknown_option(option_names(cfg) | {GENERATION_ARGS}, given)
    if unknown is not None:
        name, near = unknown
        raise ConfigurationError(
            f"from_pretrained({name}=...): {name} is none of this model's options (its "
            "configuration's, fairseq's in snake_case), and fairseq would drop it without a "
            f"word: {f'did you mean {near}? ' if near else ''}correct it or drop it (a "
            "tokenizer's or BPE's own option is read with the tokenizer= or bpe= that takes it)"
        )


def check_registered_names(given: dict) -> None:
    """tokenizer= and bpe=, refused where fairseq registers no such name: it failed in a KeyError
    traceback that named the value alone ('mosess'), or, with the BPE's own options given beside
    it (bpe='subword-nmt', bpe_codes=...), those were refused as options of no block."""
    for option in REGISTERED_OPTIONS:
        name = given.get(option)
        choices = sorted(REGISTRIES[option]["registry"])
        if name is not None and name not in choices:
            near = difflib.get_close_matches(str(name), choices, n=1)
            raise ConfigurationError(
                f"from_pretrained({option}={name!r}): fairseq has no {option} {name!r}: "
                f"{f'did you mean {near[0]!r}? ' if near else ''}give one of {', '.join(choices)}"
            )


def option_names(cfg: DictConfig) -> set:
    """The names of the configuration's blocks and of the options they hold, at any depth. A block
    that is not a DictConfig (a legacy optimizer's Namespace) is left out: fairseq sets every
    option given on one, read or not."""
    names = set()
    for name in cfg.keys():
        names.add(name)
        block = cfg._get_node(name)  # not cfg[name]: a mandatory value ('???') raises when read
        if isinstance(block, DictConfig):
            names |= option_names(block)
    return names


def unknown_option(names: set, given) -> Optional[Tuple[str, Optional[str]]]:
    """The first option given that names is without, and the nearest of names to it (None where
    none is near); None where names holds every one."""
    for name in given:
        if name not in names:
            near = difflib.get_close_matches(name, names, n=1)
            return name, near[0] if near else None
    return None


def check_sentences_given(sentences) -> None:
    """The sentences of translate() or sample(): one str, or an iterable of them. bytes are an
    iterable of numbers, each of which fairseq read as a sentence, to fail in a TypeError traceback
    ('normalize() argument 2 must be str, not int')."""
    if isinstance(sentences, BYTES) or not isinstance(sentences, Iterable):
        raise ConfigurationError(
            f"the sentences given are {type(sentences).__name__}, not text: give a sentence as a "
            f"str, or a list of them{decoding(sentences)}"
        )


def decoding(given) -> str:
    """How bytes given for text become the str the hub takes; nothing for another type."""
    return " (decode bytes first: data.decode('utf-8'))" if isinstance(given, BYTES) else ""


def check_text(sentence) -> None:
    """A sentence, refused where it is not a str, in one line that names it: the Unicode
    normalization failed on it in a TypeError traceback."""
    if not isinstance(sentence, str):
        raise ConfigurationError(
            f"a sentence given as {type(sentence).__name__}, {reprlib.repr(sentence)}, not text: "
            f"give each sentence as a str{decoding(sentence)}"
        )


class CallsOptions:
    """A call's generation options over those the model was loaded with, read as attributes,
    without copying the configuration at every call (fairseq copies it once more to generate)."""

    def __init__(self, loaded, call: dict):
        self.loaded, self.call = loaded, call

    def __getattr__(self, name: str):
        return self.call[name] if name in self.call else getattr(self.loaded, name)


class RecurrentTranslationHubInterface(GeneratorHubInterface):
    def __init__(self, cfg, task, models):
        # The task that translates an empty line as empty, replacing unknown words if asked.
        replace_unk = cfg.generation.replace_unk
        task = TranslationWithSourceWordsTask.in_place_of(task, replace_unk)
        if replace_unk is not None:
            task.check_attention(models, "replace_unk")
            cfg.generation.replace_unk = None  # the task's option now, not fairseq's
        bpe = cfg.bpe
        cfg.bpe = None  # fairseq's own would read the codes in the locale's encoding
        super().__init__(cfg, task, models)
        cfg.bpe = bpe
        self.bpe = subword_nmt_codes.build_bpe(bpe)

    def tokenize(self, sentence: str) -> str:
        check_text(sentence)
        return super().tokenize(normalized(sentence))

    def binarize(self, sentence: str) -> torch.Tensor:
        """As fairseq-interactive reads a line with the task: a control symbol typed as a word is
        <unk>, not the symbol (fairseq's binarize reads it as an end of sentence or padding)."""
        return self.task.encode_source(sentence)

    def sample(self, sentences, beam: int = 1, verbose: bool = False, **kwargs):
        check_sentences_given(sentences)
        if kwargs.get("nbest", 1) != 1:
            # fairseq's sample() (and translate()) keeps each sentence's best hypothesis alone
            raise ConfigurationError(
                f"nbest={kwargs['nbest']!r}: translate() and sample() return each sentence's best "
                "translation alone; call generate() on hub.encode(sentence) for the nbest "
                "hypotheses (hub.decode(hypothesis['tokens']) gives each one's text)"
            )
        if self.task.replaces_unknown_words:
            batch = [sentences] if isinstance(sentences, str) else list(sentences)
            self.task.keep_source_words([self.apply_bpe(self.tokenize(text)) for text in batch])
            sentences = sentences if isinstance(sentences, str) else batch  # a generator reads once
        return super().sample(sentences, beam, verbose, **kwargs)

    def generate(self, tokenized_sentences, beam: int = 5, verbose: bool = False, **kwargs):
        options = {k: v for k, v in kwargs.items() if k not in CALL_ARGUMENTS}
        self.check_options(beam, options)
        self.check_constraints(options, kwargs.get("inference_step_args"))
        if verbose:
            self.check_logged_alignment(options)
        self.check_lengths(tokenized_sentences)
        with warnings.catch_warnings():  # the program's own filters again after the call
            warnings.filterwarnings("ignore", PINNED_MEMORY_WITHOUT_A_GPU, UserWarning)
            return super().generate(tokenized_sentences, beam, verbose, **kwargs)

    def check_options(self, beam, options: dict) -> None:
        """The generation options of a call, checked as fairseq-generate's: fairseq would set a
        misspelt one, or replace_unk, where nothing reads it, and fail in a traceback on a beam
        that is not a whole number or on what its search cannot do."""
        if "replace_unk" in options:
            raise ConfigurationError(
                "replace_unk is chosen when the model is loaded, not per call: give it to "
                "from_pretrained (replace_unk='' copies source words)"
            )
        if "seed" in options:  # fairseq-generate's --seed is of its common options, not these
            raise ConfigurationError(
                f"seed={options['seed']!r}: the hub has no seed option; call "
                "torch.manual_seed(SEED) before sample(..., sampling=True), and the same call "
                "gives the same samples"
            )
        unknown = sorted(set(options) - set(self.cfg.generation))
        if unknown:
            raise ConfigurationError(
                f"{unknown[0]} is not one of fairseq's generation options: give those of "
                "fairseq-generate, in snake_case (beam, nbest, lenpen, max_len_b, unkpen, ...)"
            )
        if options.get("score_reference"):
            raise ConfigurationError(
                "score() (generate(score_reference=True)) is fairseq's hub scoring for language "
                "models, which read a sentence as its own target: a translation model has a "
                "source and a reference, which the hub has no call for (fairseq failed in a "
                "TypeError traceback); score references with fairseq-generate DATA --user-dir "
                "bahdanau_plugin --path CHECKPOINT --score-reference"
            )
        for name, value in {"beam": beam, "nbest": options.get("nbest", 1)}.items():
            if type(value) is not int or value < 1:
                raise ConfigurationError(f"{name}={value!r}: give a whole number, 1 or more")
        if options.get("print_alignment") not in (None, "hard", "soft"):
            raise ConfigurationError(
                f"print_alignment={options['print_alignment']!r}: give 'hard' or 'soft'"
            )
        calls_options = CallsOptions(self.cfg.generation, {"beam": beam, **options})
        refuse_what_fairseqs_search_cannot_do(calls_options)
        refuse_a_language_model_nothing_reads(calls_options)
        refuse_a_prefix_nothing_reads(calls_options)

    def check_constraints(self, options: dict, inference_step_args: Optional[dict]) -> None:
        """fairseq's hub searches with constraints where given both constraints= ('ordered' or
        'unordered': its constrained search) and the constraints themselves, packed, in
        inference_step_args: either alone failed in a traceback ("TypeError: 'NoneType' object is
        not iterable" for the search without constraints, whatever translate() was given)."""
        search = CallsOptions(self.cfg.generation, options).constraints
        given = (inference_step_args or {}).get("constraints")
        if search and given is None:
            raise ConfigurationError(
                f"constraints={search!r} chooses fairseq's constrained search, and no constraints "
                "are given: give them to generate(..., inference_step_args={'constraints': "
                "pack_constraints(...)}) (fairseq.token_generation_constraints), or drop "
                "constraints="
            )
        if given is not None and not search:
            raise ConfigurationError(
                "inference_step_args gives constraints, which fairseq's constrained search alone "
                "writes: give constraints='ordered' or 'unordered' beside them"
            )

    def check_logged_alignment(self, options: dict) -> None:
        """verbose=True logs each hypothesis's alignment as fairseq's log writes it, as
        source-target pairs: a hard alignment. A soft one, a row of weights per target token,
        would fail to unpack in a traceback once every sentence is translated."""
        if CallsOptions(self.cfg.generation, options).print_alignment == "soft":
            raise ConfigurationError(
                "print_alignment='soft' with verbose=True: fairseq's log writes hard alignments "
                "only (source-target pairs): give print_alignment='hard' to log them, or read the "
                "soft alignment from each hypothesis's 'alignment', without verbose"
            )

    def check_lengths(self, tokenized_sentences) -> None:
        """A sentence over max_source_positions, refused before any is translated. fairseq would
        stop with a traceback, or leave it out of the results under skip_invalid_size_inputs, so
        that the translations after it answered the sentences before them."""
        if torch.is_tensor(tokenized_sentences) and tokenized_sentences.dim() == 1:
            tokenized_sentences = [tokenized_sentences]
        limit = self.max_positions[0] if isinstance(self.max_positions, tuple) else None
        for index, tokens in enumerate(tokenized_sentences):
            if limit is not None and tokens.numel() > limit:
                raise ConfigurationError(
                    f"sentence {index} has {tokens.numel():,} tokens (end of sentence included), "
                    f"over max_source_positions {limit:,}: load the model with "
                    "from_pretrained(..., max_source_positions=N) to translate it (the models "
                    "take any length), or split it"
                )
