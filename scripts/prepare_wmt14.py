#!/usr/bin/env python3
"""WMT'14 English->French as in Bahdanau et al. (2015): the public release to fairseq binaries.

Training: Europarl v7, Common Crawl, UN, News Commentary v9, the 10^9 French-English corpus
(about 36M pairs); valid: newstest2012 + newstest2013; test: newstest2014, full (3,003 sentences),
taken from its SGML files. Not reproduced: the paper's data selection down to 348M words (see
docs/data.md). Tokenization, cleaning, vocabulary and binarization as in docs/data.md.

example:
  python scripts/prepare_wmt14.py --out /data/wmt14-en-fr --shortlist 30000 --max-len 50
"""

from typing import Optional, Sequence

from bahdanau_plugin.fairseq_patches import print_plugin_errors_as_one_line
from bahdanau_tools.data.command_line import pipeline_parser, settings_from
from bahdanau_tools.data.pipeline import prepare
from bahdanau_tools.data.wmt14 import extract_release, fetch_archives, wmt14_splits


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = pipeline_parser(
        __doc__,
        from_dir_help="folder holding the release archives under their published names "
                      "(training-parallel-europarl-v7.tgz, ..., dev.tgz, test-full.tgz); without it they "
                      "are downloaded into OUT/download, resumably, and checked against their MD5 sums",
    )
    arguments = parser.parse_args(argv)
    archives = fetch_archives(arguments.from_dir, arguments.out / "download")
    extracted = extract_release(archives, arguments.out / "orig")
    prepare("WMT'14", wmt14_splits(extracted), arguments.out, settings_from(arguments))


if __name__ == "__main__":
    print_plugin_errors_as_one_line()  # bad input ends the script with one line, not a traceback
    main()
