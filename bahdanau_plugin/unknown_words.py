"""Unknown-word replacement from the soft alignment (Jean et al., 2015; Luong et al., 2015).

With fairseq's own option, ``--replace-unk [DICTIONARY]`` (fairseq-generate, fairseq-interactive) or
``replace_unk=`` (the hub interface), each ``<unk>`` of a translation becomes the source word its
target position attends to most (the j of the largest alpha_ij, as ``--print-alignment`` prints
it), looked up in the dictionary file when one is given and the word is in it, copied otherwise.

fairseq 0.12 has the option but no working replacement (fairseq issues #3533 and #1033), so the
plugin replaces it, as fairseq_patches.py lists:

- the words to copy are the real source words, where each tool still has them: fairseq-generate
  reads them from the text the binaries were made from, ``DATA/SPLIT.SRC-TGT.SRC.txt``
  (``source_text_path``; bahdanau-prepare-data writes it), since its binaries hold ``<unk>``;
  fairseq-interactive gives each input word outside the source dictionary an id of its own past
  the models' vocabulary (``learn_input_words``), which the models read as ``<unk>``; the hub
  interface takes them from the sentences it is given;
- after beam search, ``ReplacingGenerator`` computes each hypothesis' symbols with its ``<unk>``
  replaced and hands them on in the hypothesis' alignment (``ReplacedAlignment``), the one value
  besides its tokens that fairseq's tools pass to ``utils.post_process_prediction``, which then
  uses them. Replacement works on tokens as binarized (words, or BPE units), before BPE removal
  and detokenization.
"""

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

import torch
from fairseq import utils
from fairseq.data import Dictionary, data_utils
from omegaconf import open_dict

from .errors import ConfigurationError

OPTION = "--replace-unk"
# What fairseq's parser stores for --replace-unk given without a dictionary file.
NO_DICTIONARY = "@@ "
# fairseq-generate refuses --replace-unk on binarized data (it reads source words only from raw
# text); the plugin moves the option under this key of the generation configuration before that
# check, with the split whose source text its generator reads.
TAKEN_OVER = "replace_unk_from_attention"


def source_text_path(data: Path, split: str, source_lang: str, target_lang: str) -> Path:
    """The text of a split's source side, tokens as binarized, beside its binaries. Not the name of
    fairseq's raw-text files, which fairseq would read instead of the binaries."""
    return Path(data) / f"{split}.{source_lang}-{target_lang}.{source_lang}.txt"


def load_word_dictionary(replace_unk: Optional[str]) -> Optional[Dict[str, str]]:
    """None without --replace-unk; {} without a dictionary file (source words are copied); else
    the file's "SOURCE_WORD TARGET_WORD" lines (fairseq's format), checked."""
    if replace_unk is None:
        return None
    if replace_unk in ("", NO_DICTIONARY):
        return {}
    try:
        with open(replace_unk, encoding="utf-8") as lines:
            return _dictionary_entries(replace_unk, lines)
    except FileNotFoundError:
        raise ConfigurationError(
            f"{OPTION} {replace_unk}: no such dictionary file; give an existing one, or "
            f"{OPTION} alone to copy the source words"
        ) from None


def _dictionary_entries(path: str, lines) -> Dict[str, str]:
    entries, first_line = {}, {}
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ConfigurationError(
                f"{OPTION} {path}, line {number}: expected a source word and its translation "
                f"separated by a space, got {line.strip()!r}; fix or delete that line"
            )
        source, target = fields
        if source in entries:
            raise ConfigurationError(
                f"{OPTION} {path}, line {number}: {source!r} already has a translation on line "
                f"{first_line[source]}; keep one of the two lines"
            )
        entries[source], first_line[source] = target, number
    return entries


def requested(generation_cfg) -> bool:
    """Whether this generation replaces unknown words (--replace-unk, or the option taken over)."""
    return (
        getattr(generation_cfg, "replace_unk", None) is not None
        or getattr(generation_cfg, TAKEN_OVER, None) is not None
    )


def replaced_symbols(
    hypothesis: Dict[str, torch.Tensor],
    source_tokens: torch.Tensor,
    source_words: Sequence[str],
    target_dictionary: Dictionary,
    word_dictionary: Dict[str, str],
    ignored: Set[int],
) -> List[str]:
    """The hypothesis' target symbols, those in ignored left out, each <unk> replaced by the
    dictionary's translation of the source word it attends to most, or that word itself.

    source_tokens: the source sentence as the hypothesis' attention (source x target) saw it,
    padding included; source_words: its real words, end of sentence and padding excluded."""
    attention = hypothesis.get("attention")
    if attention is None or attention.numel() == 0:
        raise ConfigurationError(
            f"{OPTION} needs the models' attention, and they returned none: "
            "translate with rnnsearch checkpoints"
        )
    tokens = hypothesis["tokens"]
    pad, eos, unk = target_dictionary.pad(), target_dictionary.eos(), target_dictionary.unk()
    # fairseq's hard alignment: for each target token, the source word of the largest alpha
    aligned = {
        target: source
        for source, target in utils.extract_hard_alignment(
            attention.t().float().cpu(), source_tokens.cpu(), tokens.cpu(), pad, eos
        )
    }
    symbols = []
    for position, token in enumerate(tokens.tolist()):
        if token in ignored:
            continue
        if token == unk and position in aligned:  # an empty source has nothing to align to
            word = source_words[aligned[position]]
            symbols.append(word_dictionary.get(word, word))
        else:
            symbols.append(target_dictionary[token])
    return symbols


class ReplacedAlignment(list):
    """A hypothesis' alignment as fairseq made it (what --print-alignment prints: (source, target)
    pairs, or soft rows), and its target symbols with every <unk> replaced."""

    def __init__(self, alignment, symbols: List[str]):
        super().__init__(alignment)
        self.symbols = symbols

    def post_processed(self, target_dictionary: Dictionary, remove_bpe: Optional[str]):
        """What utils.post_process_prediction returns: (tokens, text, alignment)."""
        text = data_utils.post_process(" ".join(self.symbols), remove_bpe)
        # as fairseq does with its own replacements: the dictionary learns the new words, for its scorer
        return target_dictionary.encode_line(text, add_if_not_exist=True), text, self


class SourceText:
    """fairseq-generate's source words: line N of the split's text holds sentence N."""

    def __init__(self, path: Path):
        if not path.is_file():
            raise ConfigurationError(
                f"{OPTION}: fairseq-generate reads the real source words from {path}, the text the binaries were "
                "made from (tokens as binarized, one sentence per line), and it is missing: write it there "
                "(bahdanau-prepare-data does)"
            )
        self.path = path
        self.lines = path.read_text(encoding="utf-8").splitlines()

    def words(self, sample, row: int, tokens: int) -> List[str]:
        index = sample["id"][row].item()
        words = self.lines[index].split() if index < len(self.lines) else []
        if len(words) != tokens:
            raise ConfigurationError(
                f"{OPTION}: line {index + 1} of {self.path} has {len(words)} words but sentence {index} of the "
                f"binarized split has {tokens} tokens; that file must hold the text the binaries were made from"
            )
        return words


class DictionaryWords:
    """fairseq-interactive's source words: what each id stands for in the source dictionary, which
    learn_input_words taught the input's unknown words."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def words(self, sample, row: int, tokens: int) -> List[str]:
        ids = sample["net_input"]["src_tokens"][row].tolist()
        return [
            self.dictionary[i]
            for i in ids
            if i not in (self.dictionary.pad(), self.dictionary.eos())
        ]


class ReplacingGenerator:
    """fairseq's generator, then the replacement: every hypothesis' alignment becomes a ReplacedAlignment."""

    def __init__(
        self, generator, source, target_dictionary: Dictionary, word_dictionary: Dict[str, str]
    ):
        self.generator = generator
        self.source = source
        self.target_dictionary = target_dictionary
        self.word_dictionary = word_dictionary

    def __getattr__(self, name):
        return getattr(self.generator, name)

    @torch.no_grad()
    def generate(self, models, sample, **kwargs):
        hypotheses = self.generator.generate(models, as_models_read_it(models, sample), **kwargs)
        source_tokens = sample["net_input"]["src_tokens"]
        ignored = set(getattr(self.generator, "symbols_to_strip_from_output", ())) | {
            self.target_dictionary.eos(),
            self.target_dictionary.bos(),
        }
        pad, eos = (
            self.target_dictionary.pad(),
            self.target_dictionary.eos(),
        )  # the same in every fairseq dictionary
        for row, sentence_hypotheses in enumerate(hypotheses):
            words = self.source.words(
                sample, row, int((source_tokens[row].ne(pad) & source_tokens[row].ne(eos)).sum())
            )
            for hypothesis in sentence_hypotheses:
                symbols = replaced_symbols(
                    hypothesis,
                    source_tokens[row],
                    words,
                    self.target_dictionary,
                    self.word_dictionary,
                    ignored,
                )
                hypothesis["alignment"] = ReplacedAlignment(hypothesis["alignment"], symbols)
        return hypotheses


def as_models_read_it(models, sample):
    """sample with every source id past the models' vocabulary (an unknown word learn_input_words
    kept) turned into <unk>."""
    tokens = sample["net_input"]["src_tokens"]
    vocabulary = min(model.encoder.embed_tokens.num_embeddings for model in models)
    unknown = tokens.ge(vocabulary)
    if not unknown.any():
        return sample
    unk = models[0].encoder.dictionary.unk()
    return {
        **sample,
        "net_input": {**sample["net_input"], "src_tokens": tokens.masked_fill(unknown, unk)},
    }


def replacing_generator(task, generator, generation_cfg):
    """The generator task.build_generator made, replacing unknown words if generation_cfg asks for it."""
    taken_over = getattr(generation_cfg, TAKEN_OVER, None)
    if taken_over is not None:
        data = utils.split_paths(task.cfg.data)[0]
        path = source_text_path(
            data, taken_over["split"], task.cfg.source_lang, task.cfg.target_lang
        )
        return ReplacingGenerator(
            generator,
            SourceText(path),
            task.target_dictionary,
            load_word_dictionary(taken_over["dictionary"]),
        )
    replace_unk = getattr(
        generation_cfg, "replace_unk", None
    )  # fairseq-train's --eval-bleu passes no such option
    if replace_unk is not None:
        return ReplacingGenerator(
            generator,
            DictionaryWords(task.source_dictionary),
            task.target_dictionary,
            load_word_dictionary(replace_unk),
        )
    return generator


# Set on a dictionary by learn_input_words: its size before it learnt any input word.
VOCABULARY_SIZE = "bahdanau_vocabulary_size"


def learn_input_words(dictionary: Dictionary, lines: Sequence[str]) -> None:
    """Give every word of lines that the dictionary lacks an id past its vocabulary, forgetting
    those the previous input added: the source dictionary holds at most one input's unknown words."""
    if not hasattr(dictionary, VOCABULARY_SIZE):
        setattr(dictionary, VOCABULARY_SIZE, len(dictionary))
    vocabulary = getattr(dictionary, VOCABULARY_SIZE)
    for word in dictionary.symbols[vocabulary:]:
        del dictionary.indices[word]
    del dictionary.symbols[vocabulary:], dictionary.count[vocabulary:]
    for line in lines:
        for word in line.split():
            if word not in dictionary.indices:
                dictionary.add_symbol(word, n=0)


def take_over(cfg) -> None:
    """Move --replace-unk of fairseq-generate past its check for raw text, under TAKEN_OVER, with
    the split whose source text the generator reads."""
    if cfg.generation.replace_unk is None:
        return
    with open_dict(cfg.generation):
        setattr(
            cfg.generation,
            TAKEN_OVER,
            {"dictionary": cfg.generation.replace_unk, "split": cfg.dataset.gen_subset},
        )
    cfg.generation.replace_unk = None


def replacing_hub_sample(sample):
    """GeneratorHubInterface.sample (translate() calls it), replacing unknown words when the hub was
    made with replace_unk: fairseq's hub loads that dictionary and never uses it."""

    def wrapper(hub, sentences, beam: int = 1, verbose: bool = False, **kwargs):
        if hub.align_dict is None:
            return sample(hub, sentences, beam, verbose, **kwargs)
        if isinstance(sentences, str):
            return wrapper(hub, [sentences], beam, verbose, **kwargs)[0]
        tokenized = [hub.apply_bpe(hub.tokenize(sentence)) for sentence in sentences]
        sources = [hub.binarize(text) for text in tokenized]
        # replace_unk=None: the hub's generator has no source words; they are here
        batched = hub.generate(sources, beam, verbose, **{**kwargs, "replace_unk": None})
        return [
            hub.detokenize(
                hub.remove_bpe(" ".join(_hub_symbols(hub, hypotheses[0], source, text.split())))
            )
            for hypotheses, source, text in zip(batched, sources, tokenized)
        ]

    return wrapper


def _hub_symbols(hub, hypothesis, source: torch.Tensor, words: List[str]) -> List[str]:
    """The hypothesis' symbols, replaced, for a source sentence that the hub's batch padded to the
    length of the hypothesis' attention."""
    padded = data_utils.collate_tokens(
        [source],
        hub.src_dict.pad(),
        left_pad=hub.task.cfg.left_pad_source,
        pad_to_length=hypothesis["attention"].size(0),
    )[0]
    ignored = {hub.tgt_dict.eos(), hub.tgt_dict.bos()}
    return replaced_symbols(hypothesis, padded, words, hub.tgt_dict, hub.align_dict, ignored)
