#!/usr/bin/env python3
"""Translate a binarized test set with one or more checkpoints (fairseq-generate, beam search) and
report as the paper does:

  bleu.json, bleu.txt   sacrebleu BLEU (detokenized, cased) with its signature, on All sentences
                        and on No UNK: the sentences whose source and reference have no <unk> word
                        (Table 1; with BPE data nearly every sentence)
  bleu_by_length.csv    BLEU by source length in words, for every model (Figure 2), and
  bleu_by_length.png    its plot, one line per model
  heatmaps/NAME/sentence_ID.png
                        soft alignments of the chosen sentences (Figure 3), for models with
                        attention
  NAME/generate-SUBSET.txt, NAME/SUBSET.hyp
                        fairseq-generate's output, and the detokenized translations one per line

example (data from scripts/prepare_multi30k.py --out /tmp/multi30k-bpe10k):
  python scripts/evaluate.py --data /tmp/multi30k-bpe10k/data-bin --out-dir results \\
      --model rnnsearch=ckpt/rnnsearch/checkpoint_best.pt \\
      --model rnnencdec=ckpt/rnnencdec/checkpoint_best.pt \\
      --heatmaps 0 17
"""

from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_tools.evaluation.command_line import main

if __name__ == "__main__":
    print_errors_as_one_line()  # bad input ends the script with one line, not a traceback
    main(__doc__)
