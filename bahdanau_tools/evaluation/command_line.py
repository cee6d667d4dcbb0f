"""bahdanau-evaluate: BLEU as the paper reports it, for one or more checkpoints.

Translates a binarized test set with each checkpoint (fairseq-generate, beam search), saying how
many sentences are translated as the batches come, and reports as the paper does:

  bleu.json, bleu.txt   Table 1: BLEU on All sentences and on No UNK, the sentences whose source
                        and reference have no <unk> word (with BPE data nearly every sentence),
                        two ways, each with its sacrebleu signature: detokenized sacreBLEU (13a,
                        cased, against --references) and tokenized BLEU, the paper's (Moses tokens
                        as they are, against --tokenized-references). As the paper's footnote
                        says, No UNK is scored on a second decoding of the split in which the
                        models may not generate <unk> (--unkpen inf): every sentence is translated
                        twice, which can double the time evaluation takes, unless no sentence is
                        in No UNK
  bleu_by_length.csv    Figure 2: detokenized sacreBLEU by source length in words, for every
  bleu_by_length.png    model, of its ordinary translations, and its plot, one line per model
  heatmaps/NAME/sentence_ID.png
                        soft alignments of the chosen sentences (Figure 3), for models with
                        attention
  NAME/generate-SUBSET.txt, NAME/SUBSET.hyp, NAME/SUBSET.tok.hyp
                        fairseq-generate's output, and the translations one per line, detokenized
                        and tokenized
  NAME/generate-SUBSET.no-unk.txt, NAME/SUBSET.no-unk.hyp, NAME/SUBSET.no-unk.tok.hyp
                        the same for the decoding without <unk>

Every input is checked, each checkpoint loaded, before anything is translated. A rerun into the
same --out-dir then removes the files above that the run before wrote for its models: one that
fails part way leaves no scores of the run before beside its translations. Other files stay.

example (data from bahdanau-prepare-data multi30k --out /tmp/multi30k-bpe10k):
  bahdanau-evaluate --data /tmp/multi30k-bpe10k/data-bin --out-dir results \\
      --model rnnsearch=ckpt/rnnsearch/checkpoint_best.pt \\
      --model rnnencdec=ckpt/rnnencdec/checkpoint_best.pt \\
      --heatmaps 0 17
"""

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from tqdm import tqdm

from bahdanau_plugin import provenance
from bahdanau_plugin.errors import ConfigurationError, print_errors_as_one_line
from bahdanau_plugin.options import path_argument, positive_int
from bahdanau_plugin.output_folder import output_folder, write_failures_explained
from bahdanau_plugin.unicode_form import normalized
from bahdanau_plugin.unknown_words import (
    check_source_text_there,
    load_word_dictionary,
    source_text_path,
)

from ..alignment import NoAttentionError
from ..errors import EvaluationError
from ..bpe_units import codes_mismatch, holds_bpe_units
from ..data.digests import HASH, file_hash
from ..heatmaps import draw_translation
from ..hub import ensemble_members, load_translator
from ..search_options import add_beam, add_length_and_ranking, search
from ..user_dir import add_user_dir, import_user_dir
from .binarized_split import (
    BPE_PIECE,
    BinarizedSplit,
    check_target_text,
    load_split,
    longest_sentence,
    sentences_without_unknown_words,
    source_lengths_in_words,
    source_tokens,
)
from .bleu import DETOKENIZED as DETOKENIZED_BLEU
from .bleu import TOKENIZED as TOKENIZED_BLEU
from .bleu import table1_scores
from .generate import (
    NEVER_UNK,
    TOKENIZED,
    Generation,
    Progress,
    cut_at_the_length_limit,
    max_positions,
    read_hypotheses,
    run_generate,
)
from .length_buckets import bleu_by_length, length_buckets, plot_bleu_by_length, write_csv
from .text import read_lines, same_sentence


# the outputs at --out-dir's top level; each model's go to the folder OUT/NAME
BLEU_JSON, BLEU_TEXT = "bleu.json", "bleu.txt"  # Table 1
BY_LENGTH_CSV, BY_LENGTH_PNG = "bleu_by_length.csv", "bleu_by_length.png"  # Figure 2
HEATMAPS = "heatmaps"  # Figure 3, a folder per model
SCORES = (BLEU_JSON, BLEU_TEXT, BY_LENGTH_CSV, BY_LENGTH_PNG)
OWN_OUTPUTS = {output.casefold(): output for output in SCORES + (HEATMAPS,)}
HYPOTHESES = {"detokenized": "hyp", "tokenized": "tok.hyp"}  # kind -> suffix of OUT/NAME/SUBSET.*
# each model's two decodings of the split, and what their files' names add to SUBSET: the ordinary
# one (the All column, Figure 2), and one with <unk> disallowed (No UNK, Table 1's footnote)
ORDINARY, WITHOUT_UNK = "all", "no_unk"
DECODINGS = {ORDINARY: "", WITHOUT_UNK: ".no-unk"}
HEATMAP_FILE = re.compile(r"sentence_\d+\.png")  # heatmap_file's names
# the folders of --out of bahdanau-prepare-data that hold the references, by the option they go to
REFERENCE_FOLDERS = {"--references": "raw", "--tokenized-references": "tok"}


def generate_output(out_dir: Path, name: str, subset: str, decoding: str) -> Path:
    return out_dir / name / f"generate-{subset}{DECODINGS[decoding]}.txt"


def hypotheses_file(out_dir: Path, name: str, subset: str, decoding: str, kind: str) -> Path:
    return out_dir / name / f"{subset}{DECODINGS[decoding]}.{HYPOTHESES[kind]}"


def heatmaps_folder(out_dir: Path, name: str) -> Path:
    return out_dir / HEATMAPS / name


def heatmap_file(out_dir: Path, name: str, sentence: int) -> Path:
    return heatmaps_folder(out_dir, name) / f"sentence_{sentence}.png"


def named_checkpoint(text: str) -> Tuple[str, Path]:
    """NAME=CHECKPOINT, or NAME=A.pt:B.pt for an ensemble (fairseq's --path A.pt:B.pt)."""
    name, separator, path = text.partition("=")
    if not separator or not name or not path:
        raise argparse.ArgumentTypeError(
            f"expected NAME=CHECKPOINT (e.g. rnnsearch=ckpt/checkpoint_best.pt), got {text!r}"
        )
    # bash expands a '~' after this '=' and ':' only where NAME is a variable's name
    # (rnnsearch=~/a.pt, not rnn-search=~/a.pt, nor --model=rnnsearch=~/a.pt)
    for checkpoint in path.split(":"):
        path_argument(checkpoint)
    return name, Path(path)


def evaluation_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bahdanau-evaluate",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=path_argument,
        required=True,
        help="the fairseq data-bin folder (OUT/data-bin of bahdanau-prepare-data)",
    )
    parser.add_argument(
        "--model",
        type=named_checkpoint,
        action="append",
        required=True,
        metavar="NAME=CHECKPOINT",
        help="a model to evaluate and its name in tables and plots, or an ensemble "
        "(NAME=A.pt:B.pt); repeat for several",
    )
    add_user_dir(parser)
    parser.add_argument(
        "--out-dir",
        type=path_argument,
        required=True,
        help="where the translations, scores and figures go",
    )
    parser.add_argument(
        "--subset", default="test", help="the split to translate (default: %(default)s)"
    )
    parser.add_argument("--source-lang", default="en", help="default: %(default)s")
    parser.add_argument("--target-lang", default="fr", help="default: %(default)s")
    parser.add_argument(
        "--references",
        type=path_argument,
        help="untokenized references, one per line, for detokenized sacreBLEU (default: "
        "DATA/../raw/SUBSET.TARGET_LANG)",
    )
    parser.add_argument(
        "--tokenized-references",
        type=path_argument,
        help="the same references Moses-tokenized (before BPE), for tokenized BLEU "
        "(default: DATA/../tok/SUBSET.TARGET_LANG)",
    )
    parser.add_argument(
        "--replace-unk",
        nargs="?",
        const="",
        metavar="DICTIONARY",
        help="replace each <unk> by the source word it attends to most, translated by the "
        "dictionary file if given (fairseq-generate --task translation_with_source_words "
        "--replace-unk)",
    )
    parser.add_argument(
        "--bpe-codes",
        type=path_argument,
        help="the subword-nmt codes the data was segmented with, for data in BPE units (default: "
        "DATA/../bpe.codes)",
    )
    add_beam(parser)
    add_length_and_ranking(parser)
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=32,
        help="sentences per batch: the translations, and so the progress lines, come a batch at a "
        "time (default: %(default)s)",
    )
    parser.add_argument(
        "--bucket-width",
        type=positive_int,
        default=10,
        help="words per length bucket of the BLEU-by-length plot (default: %(default)s)",
    )
    parser.add_argument(
        "--min-bucket-sentences",
        type=positive_int,
        default=20,
        help="a bucket with fewer sentences is widened, and the longest sentences share an "
        "open-ended last bucket (default: %(default)s)",
    )
    parser.add_argument(
        "--heatmaps",
        type=int,
        nargs="+",
        default=[],
        metavar="ID",
        help="test sentences (fairseq-generate's ids: line numbers from 0) to draw "
        "alignment heatmaps for",
    )
    return parser


def prepared_folder(data: Path) -> Path:
    """The folder bahdanau-prepare-data wrote the data-bin folder into: DATA/.. as the system reads
    it, also for --data . or ..; for a link DATA, the folder of the data-bin it leads to (a link
    is how a data-bin whose path has ':' is given), not the link's."""
    return Path(os.path.realpath(data)).parent


def default_bpe_codes(data: Path) -> Path:
    return prepared_folder(data) / "bpe.codes"


def fill_defaults(arguments: argparse.Namespace, split: BinarizedSplit) -> None:
    """References and, for data in BPE units, BPE codes where bahdanau-prepare-data puts them,
    beside the data-bin folder. Codes there beside data in words are not the data's."""
    prepared = prepared_folder(arguments.data)
    references = f"{arguments.subset}.{arguments.target_lang}"
    if arguments.references is None:
        arguments.references = prepared / REFERENCE_FOLDERS["--references"] / references
    if arguments.tokenized_references is None:
        arguments.tokenized_references = (
            prepared / REFERENCE_FOLDERS["--tokenized-references"] / references
        )
    codes = default_bpe_codes(arguments.data)
    if arguments.bpe_codes is None and holds_bpe_units(split.target.dictionary) and codes.is_file():
        arguments.bpe_codes = codes


def read_references(path: Path, sentences: int, option: str = "--references") -> List[str]:
    if not path.is_file():
        raise EvaluationError(f"references {path} not found: give them with {option}")
    references = read_lines(path, option)
    if len(references) != sentences:
        raise EvaluationError(
            f"{path} has {len(references)} lines but the test set has {sentences} sentences: give "
            f"the references of the same split ({option})"
        )
    check_no_bpe_pieces(path, references, option)
    return references


def check_no_bpe_pieces(path: Path, references: Sequence[str], option: str) -> None:
    """References in BPE pieces ("ter@@ rier", OUT/bpe/ of bahdanau-prepare-data) would be scored
    against translations whose pieces are joined into words, and BLEU would be silently low."""
    for number, line in enumerate(references, start=1):
        if BPE_PIECE.search(line):
            raise EvaluationError(
                f"line {number} of {option} {path} holds BPE pieces (word@@), which the "
                "translations are scored without: give the references before BPE "
                f"(bahdanau-prepare-data writes them to OUT/{REFERENCE_FOLDERS[option]}/)"
            )


def read_all_references(
    arguments: argparse.Namespace, split: BinarizedSplit
) -> Dict[str, List[str]]:
    """The references of each kind of translation, detokenized and tokenized; the tokenized ones
    checked against the split's binarized target side, sentence by sentence."""
    references = {
        "detokenized": read_references(arguments.references, len(split)),
        "tokenized": read_references(
            arguments.tokenized_references, len(split), "--tokenized-references"
        ),
    }
    named = f"--tokenized-references {arguments.tokenized_references}"
    check_target_text(references["tokenized"], split.target, arguments.bpe_codes, named)
    check_same_sentences(arguments, references)
    return references


def check_same_sentences(arguments: argparse.Namespace, references: Dict[str, List[str]]) -> None:
    """The untokenized references line up with the tokenized ones, which are the split's
    (check_target_text): line N of each the same sentence, by its letters and digits. Otherwise
    detokenized sacreBLEU would score every translation against another sentence's reference."""
    pairs = zip(references["detokenized"], references["tokenized"])
    for number, (untokenized, tokenized) in enumerate(pairs, start=1):
        if not same_sentence(untokenized, tokenized):
            raise EvaluationError(
                f"line {number} of --references {arguments.references} is not the sentence of "
                f"line {number} of --tokenized-references {arguments.tokenized_references} "
                "(other letters or digits): give the untokenized references of the split, in its "
                "order (bahdanau-prepare-data writes them to OUT/raw/)"
            )


def check_model_names(names: Sequence[str]) -> None:
    """Each model's outputs go to the folder OUT/NAME: a NAME must be a folder's name, not that
    of one of the tool's own outputs beside it, and no two may name the same folder, on file
    systems that ignore case (macOS, Windows) and the Unicode form (macOS) too, or one model's
    translations would replace another's."""
    for name in names:
        if name in ("", ".", "..") or "/" in name or "\\" in name:
            raise EvaluationError(
                f"model name {name!r} is not a folder name, and the model's translations go to "
                "the folder OUT/NAME: give --model a NAME without / or \\, other than . and .."
            )
        output = OWN_OUTPUTS.get(normalized(name).casefold())
        if output is not None:
            raise EvaluationError(
                f"model name {name!r} is that of bahdanau-evaluate's own output OUT/{output}, and "
                "the model's translations go to the folder OUT/NAME: give --model another NAME"
            )
    folders: Dict[str, str] = {}
    for name in names:
        folder = normalized(name).casefold()
        if folder in folders:
            alike = (
                "are the same name"
                if name == folders[folder]
                else "differ only in case or Unicode form, one folder on macOS and Windows"
            )
            raise EvaluationError(
                f"model names {folders[folder]!r} and {name!r} {alike}, and each model's "
                "translations go to the folder OUT/NAME: give each --model a NAME of its own"
            )
        folders[folder] = name


def check_inputs(arguments: argparse.Namespace, split: BinarizedSplit) -> None:
    check_model_names([name for name, _ in arguments.model])
    for name, checkpoint in arguments.model:
        for member in ensemble_members(checkpoint):
            if not member.is_file():
                raise EvaluationError(f"checkpoint {member} of model {name} not found")
            if os.pathsep in str(member):
                raise EvaluationError(
                    f"checkpoint {member} of model {name} has '{os.pathsep}' in its path, which "
                    "fairseq-generate reads as the separator of an ensemble's checkpoints: rename "
                    f"it, or link it (ln -s) under a path without '{os.pathsep}' and give the link"
                )
    for sentence in arguments.heatmaps:
        if not 0 <= sentence < len(split):
            raise EvaluationError(
                f"--heatmaps {sentence}: the test set has sentences 0 to {len(split) - 1}"
            )
    check_bpe_codes(arguments, split)
    if arguments.replace_unk is not None:
        check_replacement_reads(arguments)
    for file in SCORES:  # a model's folder of that name, from before its names were checked
        if (arguments.out_dir / file).is_dir():
            raise EvaluationError(
                f"{arguments.out_dir / file} is a folder, where bahdanau-evaluate writes its "
                f"{file}: move it aside, or give another --out-dir"
            )


def check_replacement_reads(arguments: argparse.Namespace) -> None:
    """What fairseq-generate --replace-unk reads, read now: the dictionary file (a file that cannot
    be read, or a line of it), and the split's source text beside the binaries (load_split checked
    its words where it is there), whose absence it would say only once it translated with the
    first model, followed by its failure."""
    load_word_dictionary(arguments.replace_unk, (arguments.source_lang, arguments.target_lang))
    check_source_text_there(
        source_text_path(
            arguments.data, arguments.subset, arguments.source_lang, arguments.target_lang
        )
    )


def check_bpe_codes(arguments: argparse.Namespace, split: BinarizedSplit) -> None:
    """Codes for data in BPE units, and only for it: without them fairseq-generate would leave the
    translations in pieces ("n@@ our@@ rit@@ ure"), and they would be scored so; codes for data in
    words are another data's, a sign of the wrong --data."""
    codes = arguments.bpe_codes
    if codes is not None and not codes.is_file():
        raise EvaluationError(f"BPE codes {codes} not found")
    dictionary = arguments.data / f"dict.{arguments.target_lang}.txt"
    looked_at = str(default_bpe_codes(arguments.data))
    mismatch = codes_mismatch(split.target.dictionary, dictionary, codes, not_found=looked_at)
    if mismatch is not None:
        raise EvaluationError(mismatch)


def check_checkpoints_load(arguments: argparse.Namespace) -> None:
    """Each checkpoint loaded with --data before any model is translated, so that one that cannot
    be (cut short, refused, trained with other dictionaries) is the hub's one-line CheckpointError
    now, not fairseq-generate's failure once the models before it are translated; and, with
    --replace-unk, each one able to replace unknown words (check_replaces_unknown_words)."""
    for name, checkpoint in arguments.model:
        translator = load_translator(checkpoint, arguments.data)
        check_direction(name, checkpoint, translator.task.cfg, arguments)
        if arguments.replace_unk is not None:
            check_replaces_unknown_words(name, checkpoint, translator)


def check_direction(name: str, checkpoint: Path, task_cfg, arguments: argparse.Namespace) -> None:
    """The model translates the evaluation's direction: the one its checkpoint records (given to
    fairseq-train as --source-lang), or else the direction of the data-bin's binaries, which
    fairseq-train took for its own. fairseq-generate reads a split binarized en-fr for fr->en too
    (binarized_split.binaries_languages), and with one dictionary for both languages (BPE data)
    it would have translated each sentence with a model of the other direction, without a word."""
    model = f"{task_cfg.source_lang}->{task_cfg.target_lang}"
    asked = f"{arguments.source_lang}->{arguments.target_lang}"
    if model != asked:
        raise EvaluationError(
            f"model {name} ({checkpoint}) translates {model}, and the evaluation is of {asked} "
            f"(--source-lang {arguments.source_lang} --target-lang {arguments.target_lang}): give "
            f"--source-lang {task_cfg.source_lang} --target-lang {task_cfg.target_lang}, or "
            f"evaluate it in a run of its own"
        )


def check_replaces_unknown_words(name: str, checkpoint: Path, translator) -> None:
    """The model's attention is what --replace-unk reads: fairseq-generate refuses a model without
    (rnnencdec, fairseq's lstm), and would only once the models before it were translated, twice
    each."""
    try:
        translator.task.check_attention(translator.models)
    except ConfigurationError as error:
        raise EvaluationError(f"model {name} ({checkpoint}): {error}") from None


def remove_previous_results(arguments: argparse.Namespace) -> None:
    """The files a run before wrote where this one writes: the scores and figures, and its models'
    translations and heatmaps, which would otherwise stay beside this run's if it fails part way
    (or draws fewer heatmaps). Only the tool's own files go; a folder left empty goes too."""
    out, subset = arguments.out_dir, arguments.subset
    stale = [out / file for file in SCORES]
    for name, _ in arguments.model:
        for decoding in DECODINGS:
            stale.append(generate_output(out, name, subset, decoding))
            stale += [hypotheses_file(out, name, subset, decoding, kind) for kind in HYPOTHESES]
        heatmaps = heatmaps_folder(out, name)
        if heatmaps.is_dir():
            stale += [path for path in heatmaps.iterdir() if HEATMAP_FILE.fullmatch(path.name)]
    for path in stale:
        path.unlink(missing_ok=True)
    for folder in [heatmaps_folder(out, name) for name, _ in arguments.model] + [out / HEATMAPS]:
        with contextlib.suppress(OSError):  # not there, or holding other files
            folder.rmdir()


def translate(
    arguments,
    generation: Generation,
    sentences: int,
    name: str,
    checkpoint: Path,
    decoding: str,
    scored: Sequence[int],
) -> Dict[str, List[str]]:
    """One model's translations of one decoding, detokenized and tokenized; also written to
    OUT/NAME/SUBSET.hyp and OUT/NAME/SUBSET.tok.hyp (SUBSET.no-unk.* without <unk>), one per
    line. scored: the sentences whose translations are scored, for a warning where some of them
    were cut short."""
    without_unk = decoding == WITHOUT_UNK
    label = f"{name}, <unk> disallowed" if without_unk else name
    print(
        f"== {label}: fairseq-generate, beam {generation.beam}, lenpen {generation.lenpen}, "
        f"{checkpoint}",
        file=sys.stderr,
        flush=True,
    )
    output = generate_output(arguments.out_dir, name, generation.subset, decoding)
    run_generate(
        checkpoint,
        arguments.data,
        replace(generation, unk_disallowed=without_unk),
        output,
        Progress(label, sentences),
    )
    translations = {
        "detokenized": read_hypotheses(output, sentences),
        "tokenized": read_hypotheses(output, sentences, TOKENIZED),
    }
    warn_of_cut_translations(label, output, scored, generation.max_len_b)
    for kind, lines in translations.items():
        hypotheses_file(arguments.out_dir, name, generation.subset, decoding, kind).write_text(
            "".join(line + "\n" for line in lines), encoding="utf-8"
        )
    return translations


def warn_of_cut_translations(
    label: str, output: Path, scored: Sequence[int], max_len_b: int
) -> None:
    """One line where translations that are scored reached --max-len-b: cut short there, they were
    scored as the model's without a word, lower, and the longest sentences' most, Figure 2's last
    buckets (a WMT'14 reference of 120 words is some 200 BPE pieces, the default)."""
    cut = sorted(set(cut_at_the_length_limit(output, max_len_b)) & set(scored))
    if cut:
        print(
            f"warning: {label}: {len(cut):,} of {len(scored):,} translations scored reached "
            f"--max-len-b {max_len_b} tokens, where fairseq-generate ends a translation, finished "
            f"or not (first: sentence {cut[0]}): those cut short score lower, the longest "
            "sentences most (BLEU by length); raise --max-len-b",
            file=sys.stderr,
            flush=True,
        )


def translate_all(
    arguments, generation: Generation, sentences: int, known: Sequence[int]
) -> Dict[str, Dict[str, Dict[str, List[str]]]]:
    """Each model's translations of each decoding (DECODINGS), detokenized and tokenized. The one
    without <unk> is scored on the No UNK sentences (known) alone: where there is none, it is not
    made, and its translations are none."""
    translations = {}
    for name, checkpoint in arguments.model:
        model = (arguments, generation, sentences, name, checkpoint)
        translations[name] = {
            ORDINARY: translate(*model, ORDINARY, range(sentences)),
            WITHOUT_UNK: translate(*model, WITHOUT_UNK, known)
            if known
            else {kind: [] for kind in HYPOTHESES},
        }
    return translations


def _cells(scores: dict) -> List[str]:
    return [
        "-" if score["bleu"] is None else f"{score['bleu']:.2f}"
        for score in (scores["all"], scores["no_unk"])
    ]


def format_table1(report: dict) -> str:
    models = report["models"]
    first = next(iter(models.values()))
    lines = [
        f"BLEU on {report['subset']}: All {first['all']['sentences']} sentences, "
        f"No UNK {first['no_unk']['sentences']} (no word outside the vocabulary in source or "
        "reference; translated with <unk> disallowed, as in the paper)",
        f"detokenized sacreBLEU, {first['all']['signature']}",
        "tokenized BLEU (Moses tokens as they are, as multi-bleu.perl and the paper's Table 1; "
        f"not comparable with sacreBLEU), {first['tokenized']['all']['signature']}",
        f"{'':<24}{'detokenized sacreBLEU':>22}{'tokenized BLEU':>22}",
        f"{'model':<24}{'All':>11}{'No UNK':>11}{'All':>11}{'No UNK':>11}",
    ]
    for name, scores in models.items():
        cells = _cells(scores) + _cells(scores["tokenized"])
        lines.append(f"{name:<24}" + "".join(f"{cell:>11}" for cell in cells))
    return "\n".join(lines) + "\n"


def draw_heatmaps(arguments, split: BinarizedSplit) -> None:
    """Figure 3 for the chosen sentences, from the soft attention of each model that has one,
    labelled as the scores read the sentences: the source with the text the binaries were made
    from where it is beside them (source_tokens: the binaries say <unk> for an unknown BPE piece,
    without its @@), the target with the translation, <unk> replaced as --replace-unk asks."""
    if not arguments.heatmaps:  # none asked for: no model to load again
        return
    sources = source_tokens(split)
    positions = max_positions(longest_sentence(split))  # as fairseq-generate translated them
    for name, checkpoint in tqdm(arguments.model, desc="heatmaps", unit="model"):
        translator = load_translator(
            checkpoint,
            arguments.data,
            replace_unk=arguments.replace_unk,
            max_source_positions=positions,
            max_target_positions=positions,
        )
        translator.eval()
        try:
            for sentence in arguments.heatmaps:
                draw_translation(
                    translator,
                    sources[sentence].split(),
                    heatmap_file(arguments.out_dir, name, sentence),
                    beam=arguments.beam,
                    **search(arguments),
                )
        except NoAttentionError as error:
            print(f"{name}: no heatmaps, {error}", file=sys.stderr)


def model_scores(translations, references: Dict[str, List[str]], known: Sequence[int]) -> dict:
    """A model's row of Table 1: All from its ordinary translations, No UNK from those without
    <unk>, in detokenized sacreBLEU and in tokenized BLEU."""

    def scores(kind: str, tokenize: str) -> dict:
        return table1_scores(
            translations[ORDINARY][kind],
            translations[WITHOUT_UNK][kind],
            references[kind],
            known,
            tokenize,
        )

    return {
        **scores("detokenized", DETOKENIZED_BLEU),
        "tokenized": scores("tokenized", TOKENIZED_BLEU),
    }


def checkpoint_record(checkpoint: Path) -> dict:
    """A model's checkpoints' SHA-256 digests and provenance, an ensemble's in order: the digest
    tells the checkpoint apart that checkpoint_best.pt or checkpoint_last.pt named when it was
    translated, which the training that wrote it may have replaced since; the provenance, the code
    that trained it (each run's: bahdanau_plugin/provenance.py), "unknown" for a checkpoint saved
    before it was recorded."""
    members = ensemble_members(checkpoint)
    return {
        "checkpoint_sha256": [file_hash(member, HASH) for member in members],
        "checkpoint_provenance": [provenance.recorded(member) for member in members],
    }


def checkpoint_records(arguments: argparse.Namespace) -> Dict[str, dict]:
    """Each model's checkpoint_record, by model name."""
    return {name: checkpoint_record(checkpoint) for name, checkpoint in arguments.model}


def write_table1(
    arguments,
    translations,
    references: Dict[str, List[str]],
    known: Sequence[int],
    records: Dict[str, dict],
) -> None:
    report = {
        "data": str(arguments.data),
        "subset": arguments.subset,
        "references": str(arguments.references),
        "tokenized_references": str(arguments.tokenized_references),
        "bpe_codes": None if arguments.bpe_codes is None else str(arguments.bpe_codes),
        "beam": arguments.beam,
        "lenpen": arguments.lenpen,
        "replace_unk": arguments.replace_unk,
        "no_unk_translations": f"<unk> disallowed (fairseq-generate --unkpen {NEVER_UNK})",
        "models": {
            name: {
                "checkpoint": str(checkpoint),
                **records[name],
                **model_scores(translations[name], references, known),
            }
            for name, checkpoint in arguments.model
        },
    }
    (arguments.out_dir / BLEU_JSON).write_text(
        json.dumps(report, indent=2) + "\n", encoding="utf-8"
    )
    table = format_table1(report)
    (arguments.out_dir / BLEU_TEXT).write_text(table, encoding="utf-8")
    print(table, end="", flush=True)


def write_figure2(
    arguments, split: BinarizedSplit, translations, references: Dict[str, List[str]]
) -> None:
    lengths = source_lengths_in_words(split)
    buckets = length_buckets(lengths, arguments.bucket_width, arguments.min_bucket_sentences)
    detokenized = {
        name: translation[ORDINARY]["detokenized"] for name, translation in translations.items()
    }
    rows = bleu_by_length(detokenized, references["detokenized"], lengths, buckets)
    write_csv(rows, arguments.out_dir / BY_LENGTH_CSV)
    plot_bleu_by_length(
        rows,
        arguments.out_dir / BY_LENGTH_PNG,
        title=f"BLEU by source length ({arguments.subset})",
    )


def evaluate(arguments: argparse.Namespace) -> None:
    with output_folder(arguments.out_dir, "--out-dir"):
        with write_failures_explained(arguments.out_dir, "--out-dir"):
            evaluate_into_the_folder(arguments)


def evaluate_into_the_folder(arguments: argparse.Namespace) -> None:
    split = load_split(
        arguments.data, arguments.subset, arguments.source_lang, arguments.target_lang
    )
    fill_defaults(arguments, split)
    check_inputs(arguments, split)
    references = read_all_references(arguments, split)
    check_checkpoints_load(arguments)
    records = checkpoint_records(arguments)  # of the files as they are translated
    generation = Generation(
        arguments.subset,
        arguments.source_lang,
        arguments.target_lang,
        arguments.beam,
        arguments.max_len_b,
        arguments.lenpen,
        arguments.batch_size,
        arguments.bpe_codes,
        arguments.replace_unk,
        max_positions=max_positions(longest_sentence(split)),
        user_dir=arguments.user_dir,
        dataset_impl="raw" if split.as_text else None,
    )
    remove_previous_results(arguments)
    known = sentences_without_unknown_words(split)
    translations = translate_all(arguments, generation, len(split), known)
    write_table1(arguments, translations, references, known, records)
    write_figure2(arguments, split, translations, references)
    draw_heatmaps(arguments, split)


def main(argv: Optional[Sequence[str]] = None) -> None:
    print_errors_as_one_line()  # bad input ends the command with one line, not a traceback
    # warnings and errors only: the models loaded here for the heatmaps would log their whole
    # configuration at INFO
    logging.basicConfig(level=logging.WARNING, force=True)
    arguments = evaluation_parser().parse_args(argv)
    import_user_dir(arguments.user_dir)  # before any checkpoint loads, or the output folder is made
    evaluate(arguments)
