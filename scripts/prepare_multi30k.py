#!/usr/bin/env python3
"""Multi30k task 1, English->French: raw text to fairseq binaries.

Splits: train, valid (val), test (test_2016_flickr), then test1, test2, ... for every other test
set beside them named test_*.en.gz / test_*.fr.gz, in the order of their names (the summary lists
which is which). Tokenization, cleaning, vocabulary and binarization as in docs/data.md.

example:
  python scripts/prepare_multi30k.py --from-dir ../shared/data/multi30k --out /tmp/multi30k --bpe 10000
"""

from typing import Optional, Sequence

from bahdanau_plugin.fairseq_patches import print_plugin_errors_as_one_line
from bahdanau_tools.data.command_line import pipeline_parser, settings_from
from bahdanau_tools.data.multi30k import REPOSITORY_URL, download_multi30k, multi30k_splits
from bahdanau_tools.data.pipeline import prepare


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = pipeline_parser(
        __doc__,
        from_dir_help="folder holding train, val and test_2016_flickr .en.gz/.fr.gz (e.g. ../shared/data/multi30k); "
                      f"without it the files are downloaded from {REPOSITORY_URL} into OUT/download",
    )
    arguments = parser.parse_args(argv)
    source = arguments.from_dir or download_multi30k(arguments.out / "download")
    prepare("Multi30k task 1", multi30k_splits(source), arguments.out, settings_from(arguments))


if __name__ == "__main__":
    print_plugin_errors_as_one_line()  # bad input ends the script with one line, not a traceback
    main()
