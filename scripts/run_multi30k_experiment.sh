#!/usr/bin/env bash
# The real result of docs/results.md: Multi30k English->French (BPE) on the CPU. RNNsearch,
# RNNencdec and fairseq's own `lstm` (bidirectional encoder) at the same sizes, on the same data,
# each trained for the same wall-clock budget with the same recipe (and, with PAPER_RECIPE=1,
# RNNsearch once more with the paper's Adadelta recipe); then bahdanau-evaluate on
# test_2016_flickr: BLEU All and No UNK, BLEU by length (Figure 2), alignment heatmaps (Figure 3).
#
# Usage: bash scripts/run_multi30k_experiment.sh [OUT]      (default OUT: /tmp/multi30k-experiment)
# Run from anywhere with the project's environment active (fairseq-train on PATH). Settings, from
# the environment:
#   BUDGET_MINUTES=30  training time of each system (fairseq-train --stop-time-hours)
#   SYSTEMS="rnnsearch rnnencdec lstm"   the systems to train, of those three
#   JOBS=2             trainings at once, each on OMP_NUM_THREADS = cores / JOBS threads; systems
#                      are started in the order below, so with 2 jobs RNNsearch and RNNencdec
#                      share the machine with each other, then lstm with RNNsearch-Adadelta
#   PAPER_RECIPE=1     also train RNNsearch with the paper's Adadelta recipe (0: do not)
#   DATA=/tmp/multi30k-bpe10k         prepared data (bahdanau-prepare-data's --out, which holds
#                                     data-bin/); made if missing, from $MULTI30K
#   HEATMAPS="1 7 49 58 357"          test sentences (from 0) to draw alignments for ("": none)
#   and those of scripts/multi30k_recipe.sh: DIM, OPTIMIZER, LR, DROPOUT, BATCH (the recipe of the
#   three compared systems), MULTI30K, EVALUATE_OPTIONS
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then  # its usage: the comment above
  sed -n '2,/^\[ -n/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
out=$(realpath -m -- "${1:-/tmp/multi30k-experiment}")  # -- : a folder named -x is a folder
BUDGET_MINUTES=${BUDGET_MINUTES:-30}
JOBS=${JOBS:-2}
PAPER_RECIPE=${PAPER_RECIPE:-1}
DATA=$(realpath -m -- "${DATA:-/tmp/multi30k-bpe10k}")
HEATMAPS=${HEATMAPS-1 7 49 58 357}  # set and empty: no heatmaps
# shellcheck source=scripts/multi30k_recipe.sh
source "$repo/scripts/multi30k_recipe.sh"

# Every setting is checked before anything runs: a bad one would only show after the trainings.
set_stop_time_hours
if [[ ! $JOBS =~ ^[1-9][0-9]*$ ]]; then
  refuse "JOBS=$JOBS is not a number of trainings at once: give 1 or more, such as 2"
fi
if [[ $PAPER_RECIPE != [01] ]]; then
  refuse "PAPER_RECIPE=$PAPER_RECIPE: give 1 to train RNNsearch with the paper's recipe too, or 0"
fi
read -ra systems <<< "${SYSTEMS:-rnnsearch rnnencdec lstm}"
declare -A named=()
for name in "${systems[@]}"; do
  case "$name" in
    rnnsearch|rnnencdec|lstm) ;;
    *) refuse "SYSTEMS names '$name'; choose among rnnsearch, rnnencdec and lstm" ;;
  esac
  if [ -n "${named[$name]:-}" ]; then
    refuse "SYSTEMS names $name twice: each system trains once, into its own folder"
  fi
  named[$name]=1
done
read -ra heatmaps <<< "$HEATMAPS"
for sentence in "${heatmaps[@]}"; do
  if [[ ! $sentence =~ ^[0-9]+$ ]]; then
    refuse "HEATMAPS names '$sentence': give test sentence numbers (from 0), such as \"1 7 49\", or HEATMAPS=\"\" for none"
  fi
done
check_no_colon OUT "$out"
check_no_colon DATA "$DATA"
# DATA is the folder bahdanau-prepare-data writes, its data-bin/ inside: given the data-bin itself,
# the run would prepare Multi30k anew inside it, and train on that rather than on the data given
dictionaries=("$DATA"/dict.*.txt)
if [ -f "${dictionaries[0]}" ]; then
  refuse "DATA $DATA is a data-bin folder: give the folder bahdanau-prepare-data wrote it in, $(dirname "$DATA")"
fi
if [ ! -f "$DATA/data-bin/dict.en.txt" ]; then  # to be prepared below, from $MULTI30K
  check_multi30k_folder
fi
cores=$(nproc)
threads=$(( cores / JOBS > 0 ? cores / JOBS : 1 ))
mkdir -p "$out"
cd "$repo"

if [ ! -f "$DATA/data-bin/dict.en.txt" ]; then
  echo "== preparing Multi30k (BPE, 10,000 merges) -> $DATA"
  bahdanau-prepare-data multi30k --from-dir "$MULTI30K" --out "$DATA" --bpe 10000 --max-len 50
fi
# The heatmaps' sentences checked against the test set (its source text, a line a sentence, beside
# the binaries) before the trainings: bahdanau-evaluate refuses one past its end only after them.
test_source="$DATA/data-bin/test.en-fr.en.txt"
if (( ${#heatmaps[@]} )) && [ -f "$test_source" ]; then
  test_sentences=$(wc -l < "$test_source")
  for sentence in "${heatmaps[@]}"; do
    if (( 10#$sentence >= test_sentences )); then
      refuse "HEATMAPS names $sentence, but the test set of $DATA has sentences 0 to $((test_sentences - 1)): give test sentence numbers within it, or HEATMAPS=\"\" for none"
    fi
  done
fi

# Training pairs are already at most 50 words per side (bahdanau-prepare-data multi30k --max-len 50, the
# paper's RNNsearch-50 limit, counted in words), so the models get no further limit in BPE units.
lstm_sizes=(--encoder-embed-dim "$DIM" --decoder-embed-dim "$DIM" --encoder-hidden-size "$DIM"
            --decoder-hidden-size "$DIM" --decoder-out-embed-dim "$DIM")
budget=(--cpu --seed 1 --stop-time-hours "$hours" --skip-invalid-size-inputs-valid-test
        --data-buffer-size 0 --no-epoch-checkpoints --log-format simple --log-interval 50)

set_command() {  # SYSTEM: its training command, into the array $command
  local save_dir=$out/$1
  case "$1" in
    rnnsearch) command=(fairseq-train "$DATA/data-bin" --save-dir "$save_dir" --user-dir bahdanau_plugin
                        --arch rnnsearch "${sizes[@]}" --attention-dim "$DIM" "${recipe[@]}") ;;
    rnnencdec) command=(fairseq-train "$DATA/data-bin" --save-dir "$save_dir" --user-dir bahdanau_plugin
                        --arch rnnencdec "${sizes[@]}" "${recipe[@]}") ;;
    lstm) command=(fairseq-train "$DATA/data-bin" --save-dir "$save_dir"
                   --arch lstm --encoder-bidirectional "${lstm_sizes[@]}" "${recipe[@]}") ;;
    # the paper's training, as configs/paper_training.yaml; no dropout, as in the paper
    rnnsearch-adadelta) command=(bash scripts/train_paper_recipe.sh rnnsearch "$DATA/data-bin" "$save_dir"
                                 "${sizes[@]}" --attention-dim "$DIM") ;;
  esac
  command+=("${budget[@]}")
}
if [ "$PAPER_RECIPE" = 1 ]; then
  systems+=(rnnsearch-adadelta)
fi

: > "$out/commands.txt"
trap 'interrupted 2' INT
trap 'interrupted 15' TERM
for name in "${systems[@]}"; do
  while (( ${#training_name[@]} >= JOBS )); do wait_for_a_training; done
  set_command "$name"
  # as a shell reads it back: a path with spaces quoted
  { printf 'OMP_NUM_THREADS=%s' "$threads"; printf ' %q' "${command[@]}"; echo; } >> "$out/commands.txt"
  mkdir -p "$out/$name"
  echo "== $(date +%T) training $name for $BUDGET_MINUTES min on $threads thread(s); log: $out/$name/train.log"
  OMP_NUM_THREADS=$threads start_training "$name" "$out/$name/train.log" "${command[@]}"
done
wait_for_the_trainings
trap - INT TERM  # bahdanau-evaluate answers Ctrl+C itself

models=()
for name in "${systems[@]}"; do
  if [ ! -f "$out/$name/checkpoint_best.pt" ]; then
    echo "error: $name did not train; see the end of $out/$name/train.log" >&2
    exit 1
  fi
  echo "$name: $(grep -E "valid on 'valid'" "$out/$name/train.log" | tail -n 1 | cut -d'|' -f 4-)"
  models+=(--model "$name=$out/$name/checkpoint_best.pt")
done
heatmap_options=()
if (( ${#heatmaps[@]} )); then  # bahdanau-evaluate's --heatmaps takes one sentence or more
  heatmap_options=(--heatmaps "${heatmaps[@]}")
fi

echo "== $(date +%T) evaluating on test_2016_flickr -> $out/evaluation"
# Multi30k's test sentences are short (docs/results.md, "BLEU by sentence length"), so Figure 2
# gets buckets of 5 words, and the longest sentences share the last one.
OMP_NUM_THREADS=$cores bahdanau-evaluate --data "$DATA/data-bin" --out-dir "$out/evaluation" \
  "${models[@]}" --bucket-width 5 --min-bucket-sentences 15 "${heatmap_options[@]}" "${evaluate_options[@]}"
echo "== done: $out/commands.txt, $out/evaluation/{bleu.txt,bleu_by_length.csv,bleu_by_length.png,heatmaps/}"
