#!/usr/bin/env bash
# The built-in demo: a synthetic reordering task, a small RNNsearch trained briefly on CPU (how
# long: README.md), translations through fairseq-interactive, a Figure 3 style alignment heatmap,
# and the command that serves the model (bahdanau-serve).
# Usage: bash scripts/demo.sh [OUTPUT_DIR]   (default: demo/; fairseq's tools must be on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-demo}
plugin=bahdanau_plugin
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

echo "== 1/5 demo corpus -> $out/raw"
python scripts/make_demo_corpus.py --out "$out/raw"

echo "== 2/5 fairseq-preprocess -> $out/data-bin"
rm -rf "$out/data-bin"
fairseq-preprocess --source-lang en --target-lang fr \
  --trainpref "$out/raw/train" --validpref "$out/raw/valid" --testpref "$out/raw/test" \
  --destdir "$out/data-bin" --joined-dictionary --workers 2 > "$out/preprocess.log"

# The optimizer options are bahdanau_tools/demo_recipe.py's OPTIMIZER (the tests train with them too).
echo "== 3/5 fairseq-train rnnsearch (small sizes, about two minutes) -> $out/checkpoints"
rm -rf "$out/checkpoints"
fairseq-train "$out/data-bin" --user-dir "$plugin" --arch rnnsearch_50 --cpu --seed 1 \
  --encoder-embed-dim 64 --decoder-embed-dim 64 --encoder-hidden-dim 128 \
  --decoder-hidden-dim 128 --attention-dim 128 --maxout-dim 64 \
  --optimizer adam --lr 0.01 --clip-norm 1.0 --max-tokens 2000 --max-update 1200 \
  --data-buffer-size 0 --save-dir "$out/checkpoints" --no-epoch-checkpoints \
  --log-format simple --log-interval 100 \
  2>&1 | grep -E "train_inner|valid on|done training" | cut -c 1-150

echo "== 4/5 BLEU on the held-out test set, and fairseq-interactive on five of its sentences"
fairseq-generate "$out/data-bin" --user-dir "$plugin" --path "$out/checkpoints/checkpoint_last.pt" \
  --beam 12 --batch-size 128 --required-batch-size-multiple 1 --cpu 2>/dev/null | tail -n 1
sentences=$(head -n 5 "$out/raw/test.en")
fairseq-interactive "$out/data-bin" --user-dir "$plugin" \
  --path "$out/checkpoints/checkpoint_last.pt" --source-lang en --target-lang fr --beam 5 --cpu \
  --skip-invalid-size-inputs-valid-test \
  <<< "$sentences" 2>/dev/null | grep -E "^(S|H)-"

# The longest of them has the most adjectives to reorder, so the most crossing alignments.
longest=$(awk 'NF > most { most = NF; line = $0 } END { print line }' <<< "$sentences")
echo "== 5/5 alignment heatmap of \"$longest\" -> $out/figures"
bahdanau-plot-alignment --checkpoint "$out/checkpoints/checkpoint_last.pt" \
  --data "$out/data-bin" --out-dir "$out/figures" "$longest" 2>/dev/null

echo "== serve this model (a page with live alignments, and a JSON API), then open http://127.0.0.1:8000/ :"
echo "$(realpath --relative-to=. "$(command -v bahdanau-serve)") $out/checkpoints/checkpoint_last.pt --data $out/data-bin"
