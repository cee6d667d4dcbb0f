"""Data pipeline: raw parallel text to fairseq binaries, for your own corpus, WMT'14 and Multi30k.

download      resumable downloads with a size or checksum check, and their progress
reading       parallel files as raw byte lines (plain, gzip'd or SGML), streamed
cleaning      fairseq's Moses tokenizer and the rules that drop pairs
parallel      an order-preserving parallel map with bounded read-ahead
bpe           joint BPE learned with subword-nmt, applied with fairseq's subword_nmt class
binarize      fairseq-preprocess, for both vocabulary modes
summary       pairs, words, vocabulary sizes and <unk> rates of a run
pipeline      the steps above in order, for any list of splits and any language pair
stages        records of the stages that finished, so that a rerun resumes after them
progress      progress bars (tqdm) for the long stages
corpus        a user's own text: which files make which split
multi30k      which Multi30k files make which split, and where they are published
wmt14         the same for the WMT'14 release archives
command_line  bahdanau-prepare-data: your corpus or a preset (scripts/prepare_*.py run the presets)

Bad input raises bahdanau_tools.errors.DataError.
"""
