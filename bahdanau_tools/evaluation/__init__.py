"""Evaluation as in the paper: BLEU on All and No UNK sentences (Table 1), BLEU by sentence length
(Figure 2); alignment heatmaps (Figure 3) are in bahdanau_tools.heatmaps.

binarized_split the binarized test set: <unk> per sentence, source length in words, BPE or not
generate        fairseq-generate as a subprocess (<unk> allowed or not), and its hypotheses in
                order
bleu            sacrebleu's corpus BLEU and signature, on All and No UNK
length_buckets  BLEU by source length for several models: CSV and PNG
text            the references as the data preparation reads text: UTF-8, no BOM, NFC
command_line    bahdanau-evaluate: all of the above for several checkpoints

Bad input raises bahdanau_tools.errors.EvaluationError.
"""
