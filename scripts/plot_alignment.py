#!/usr/bin/env python3
"""Translate sentences with a trained model and draw each soft alignment (the paper's Figure 3)."""

import argparse
from pathlib import Path

import bahdanau_plugin  # noqa: F401  (registers the models, as --user-dir does)
from bahdanau_plugin.alignment import alignment_heatmaps


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint", type=Path, required=True, help="a checkpoint_*.pt file")
    parser.add_argument("--data", type=Path, required=True, help="the fairseq data-bin folder")
    parser.add_argument("--out-dir", type=Path, required=True, help="where alignment_N.png go")
    parser.add_argument("sentences", nargs="+", help="source sentences, one argument each")
    args = parser.parse_args()
    for path in (args.checkpoint, args.data):
        if not path.exists():
            parser.error(f"{path} does not exist")
    for path, translation in alignment_heatmaps(args.checkpoint, args.data, args.sentences, args.out_dir):
        print(f"{path}\t{translation}")


if __name__ == "__main__":
    main()
