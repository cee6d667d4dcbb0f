#!/usr/bin/env bash
# The built-in demo: a synthetic reordering task, a small RNNsearch trained briefly on CPU (how
# long: README.md), translations through fairseq-interactive, a Figure 3 style alignment heatmap,
# and the command that serves the model (bahdanau-serve).
# Usage: bash scripts/demo.sh [OUTPUT_DIR]   (default: the repository's demo/; fairseq's tools must
# be on PATH). A rerun replaces the demo's outputs there, so OUTPUT_DIR must be a new or empty
# folder, or one the demo wrote (it leaves .bahdanau-demo in it to say so).
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then  # its usage: the comment above
  sed -n '2,/^\[ -n/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi
repo="$(cd "$(dirname "$0")/.." && pwd -P)"  # as realpath gives OUTPUT_DIR, below
caller=$PWD
# OUTPUT_DIR is read from where the demo is run; the demo itself runs from the repository root
out=$(realpath -m -- "${1:-$repo/demo}")  # -- : a folder named -x is a folder
marker="$out/.bahdanau-demo"
plugin=bahdanau_plugin
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

if [[ $out == *[,:]* ]]; then
  echo "error: OUTPUT_DIR $out has a comma or ':' in its path, at which fairseq's tools split paths: give a folder whose path has none" >&2
  exit 2
fi
# The demo deletes its own outputs before it writes them anew: never those of anyone else. The
# repository's demo/ is the demo's (.gitignore), also when an older demo left no marker there.
if [ -e "$out" ] && [ ! -f "$marker" ] && [ "$out" != "$repo/demo" ] &&
   ! { [ -d "$out" ] && [ -z "$(ls -A "$out")" ]; }; then
  echo "error: OUTPUT_DIR $out exists and was not written by the demo: give a new folder (the demo replaces its own outputs there)" >&2
  exit 2
fi
mkdir -p "$out"
echo "written by scripts/demo.sh, whose reruns replace what it wrote here" > "$marker"
cd "$repo"

shown() {  # PATH as the caller can give it: relative to where the demo was run, when under it
  realpath -m --relative-base="$caller" "$1"
}

# Ends the demo when a step's tool failed (STATUS not 0), with the last line of its log: its error.
stop_if_failed() {  # TOOL STATUS LOG
  if [ "$2" != 0 ]; then
    echo "error: $1 failed (exit $2): see $(shown "$3"), which ends: $(grep -v '^[[:space:]]*$' "$3" | tail -n 1)" >&2
    exit 1
  fi
}

echo "== 1/5 demo corpus -> $(shown "$out/raw")"
python scripts/make_demo_corpus.py --out "$out/raw"

echo "== 2/5 fairseq-preprocess -> $(shown "$out/data-bin")"
rm -rf "$out/data-bin"
fairseq-preprocess --source-lang en --target-lang fr \
  --trainpref "$out/raw/train" --validpref "$out/raw/valid" --testpref "$out/raw/test" \
  --destdir "$out/data-bin" --joined-dictionary --workers 2 > "$out/preprocess.log" 2>&1 ||
  stop_if_failed fairseq-preprocess $? "$out/preprocess.log"

# The optimizer options are bahdanau_tools/demo_recipe.py's OPTIMIZER (the tests train with them too).
# Its progress is shown; its whole output is in train.log.
echo "== 3/5 fairseq-train rnnsearch (small sizes, about two minutes) -> $(shown "$out/checkpoints")"
rm -rf "$out/checkpoints"
fairseq-train "$out/data-bin" --user-dir "$plugin" --arch rnnsearch_50 --cpu --seed 1 \
  --encoder-embed-dim 64 --decoder-embed-dim 64 --encoder-hidden-dim 128 \
  --decoder-hidden-dim 128 --attention-dim 128 --maxout-dim 64 \
  --optimizer adam --lr 0.01 --clip-norm 1.0 --max-tokens 2000 --max-update 1200 \
  --data-buffer-size 0 --save-dir "$out/checkpoints" --no-epoch-checkpoints \
  --log-format simple --log-interval 100 \
  2>&1 | tee "$out/train.log" | grep --line-buffered -E "train_inner|valid on|done training" | cut -c 1-150 ||
  stop_if_failed fairseq-train "${PIPESTATUS[0]}" "$out/train.log"

# fairseq's tools log much on stderr: into a log each, shown when they fail
echo "== 4/5 BLEU on the held-out test set, and fairseq-interactive on five of its sentences"
fairseq-generate "$out/data-bin" --user-dir "$plugin" --path "$out/checkpoints/checkpoint_last.pt" \
  --beam 12 --batch-size 128 --required-batch-size-multiple 1 --cpu 2> "$out/generate.log" | tail -n 1 ||
  stop_if_failed fairseq-generate "${PIPESTATUS[0]}" "$out/generate.log"
sentences=$(head -n 5 "$out/raw/test.en")
fairseq-interactive "$out/data-bin" --user-dir "$plugin" \
  --path "$out/checkpoints/checkpoint_last.pt" --source-lang en --target-lang fr --beam 5 --cpu \
  --skip-invalid-size-inputs-valid-test \
  <<< "$sentences" 2> "$out/interactive.log" | grep -E "^(S|H)-" ||
  stop_if_failed fairseq-interactive "${PIPESTATUS[0]}" "$out/interactive.log"

# The longest of them has the most adjectives to reorder, so the most crossing alignments.
longest=$(awk 'NF > most { most = NF; line = $0 } END { print line }' <<< "$sentences")
echo "== 5/5 alignment heatmap of \"$longest\" -> $(shown "$out/figures")"
bahdanau-plot-alignment --checkpoint "$out/checkpoints/checkpoint_last.pt" \
  --data "$out/data-bin" --out-dir "$out/figures" "$longest" 2> "$out/plot-alignment.log" ||
  stop_if_failed bahdanau-plot-alignment $? "$out/plot-alignment.log"

echo "== serve this model (a page with live alignments, and a JSON API), then open http://127.0.0.1:8000/ :"
printf '%q %q --data %q\n' "$(shown "$(command -v bahdanau-serve)")" \
  "$(shown "$out/checkpoints/checkpoint_last.pt")" "$(shown "$out/data-bin")"
