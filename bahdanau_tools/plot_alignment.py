"""bahdanau-plot-alignment: translate sentences with a trained model and draw each soft alignment.

Translates each sentence and draws its soft alignment alpha_ij as a heatmap, as the paper's
Figure 3 does. Sentences are raw text: they are tokenized with fairseq's Moses tokenizer and,
given --bpe-codes, segmented as the training data was. The heatmap shows words, as the translation
prints them: BPE pieces merged back, and a word split at its dash ("t @-@ shirt") joined again (a
source word's attention summed over its pieces, a target word's averaged over its pieces).
Each is searched as bahdanau-evaluate searches a test sentence (--beam, --max-len-b, --lenpen, with
its defaults), so that a heatmap drawn here is that of the translation it scores. Sentence N's
heatmap is OUT_DIR/alignment_N.png, printed with its translation (detokenized, as
fairseq-interactive prints it); once they are drawn, those an earlier run drew there for more
sentences are removed, so that none passes for this run's.

example:
  bahdanau-plot-alignment --checkpoint checkpoints/checkpoint_best.pt --data prepared/data-bin \\
      --bpe-codes prepared/bpe.codes --out-dir figures "a man is reading ."
"""

import argparse
import os
from pathlib import Path
from typing import List, Optional

from fairseq.data import Dictionary

import bahdanau_plugin  # noqa: F401  (registers the models, as --user-dir does)
from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_plugin.options import path_argument
from bahdanau_plugin.output_folder import output_folder, write_failures_explained

from .bpe_units import codes_mismatch
from .heatmaps import alignment_heatmaps, figure_path, remove_earlier_figures
from .search_options import add_beam, add_length_and_ranking, search
from .user_dir import add_user_dir, import_user_dir


def bpe_codes_mismatch(args) -> Optional[str]:
    """What is wrong with --bpe-codes for --data, if anything: the sentences must reach the model
    segmented as its dictionary is. Otherwise most of their words are <unk> to the model, and the
    heatmap, labelled with the tokens given, draws the alignment of a sentence it never read."""
    dictionary = args.data / f"dict.{args.source_lang}.txt"
    if not dictionary.is_file():  # the model's loading names what is missing
        return None
    return codes_mismatch(Dictionary.load(str(dictionary)), dictionary, args.bpe_codes)


def figure_in_the_way(out_dir: Path, sentences: int) -> Optional[str]:
    """What is wrong with --out-dir's figure paths, if anything: a folder where a heatmap goes
    (one an earlier --out-dir OUT/alignment_1.png made, say) would end the run in a traceback as
    that figure is saved, after the sentences before it were translated."""
    for number in range(1, sentences + 1):
        path = figure_path(out_dir, number)
        if path.is_dir():
            return (
                f"{path} is a folder, where the heatmap of sentence {number} goes: move it "
                "aside, or give another --out-dir"
            )
    return None


def more_than_one_model(checkpoints: List[Path]) -> Optional[str]:
    """What is wrong where --checkpoint names more than one model: given twice, or an ensemble
    (fairseq's A:B), whose heatmaps would be one model's alone, or none."""
    whole, parts = str(checkpoints[0]), str(checkpoints[0]).split(":")
    if len(checkpoints) == 1 and (os.path.isfile(whole) or not all(map(os.path.isfile, parts))):
        return None  # a file whose name holds ":" is one model
    given = (
        ", ".join(map(str, checkpoints))
        if len(checkpoints) > 1
        else f"an ensemble, {checkpoints[0]}"
    )
    return (
        f"--checkpoint names more than one model ({given}): a heatmap draws one model's "
        "alignments; give one checkpoint, and run the command again for each other"
    )


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bahdanau-plot-alignment",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(  # appended, to refuse a second: argparse would keep the last alone
        "--checkpoint",
        type=path_argument,
        action="append",
        required=True,
        help="a checkpoint_*.pt file",
    )
    add_user_dir(parser)
    parser.add_argument(
        "--data", type=path_argument, required=True, help="the fairseq data-bin folder"
    )
    parser.add_argument(
        "--out-dir", type=path_argument, required=True, help="where alignment_N.png go"
    )
    parser.add_argument(
        "--bpe-codes", type=path_argument, help="the subword-nmt codes of BPE data (OUT/bpe.codes)"
    )
    parser.add_argument(
        "--source-lang", default="en", help="for the Moses tokenizer (default: %(default)s)"
    )
    parser.add_argument(
        "--target-lang", default="fr", help="for the Moses tokenizer (default: %(default)s)"
    )
    add_beam(parser)
    add_length_and_ranking(parser)
    parser.add_argument("sentences", nargs="+", help="source sentences, one argument each")
    return parser


def main(argv=None):
    print_errors_as_one_line()  # bad input ends the command with one line, not a traceback
    parser = argument_parser()
    args = parser.parse_args(argv)
    more_than_one = more_than_one_model(args.checkpoint)
    if more_than_one is not None:
        parser.error(more_than_one)
    args.checkpoint = args.checkpoint[0]
    import_user_dir(args.user_dir)
    for path in (args.checkpoint, args.data, args.bpe_codes):
        if path is not None and not path.exists():
            parser.error(f"{path} does not exist")
    mismatch = bpe_codes_mismatch(args)
    if mismatch is not None:
        parser.error(mismatch)
    in_the_way = figure_in_the_way(args.out_dir, len(args.sentences))
    if in_the_way is not None:
        parser.error(in_the_way)
    options = dict(tokenizer="moses", source_lang=args.source_lang, target_lang=args.target_lang)
    if args.bpe_codes is not None:
        options.update(bpe="subword_nmt", bpe_codes=str(args.bpe_codes))
    with output_folder(args.out_dir, "--out-dir"):
        with write_failures_explained(args.out_dir, "--out-dir"):
            heatmaps = alignment_heatmaps(
                args.checkpoint,
                args.data,
                args.sentences,
                args.out_dir,
                {"beam": args.beam, **search(args)},
                **options,
            )
            remove_earlier_figures(args.out_dir, len(heatmaps))
    for path, translation in heatmaps:
        print(f"{path}\t{translation}")


if __name__ == "__main__":
    main()
