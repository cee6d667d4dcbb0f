#!/usr/bin/env bash
# The research workflow of docs/results.md on Multi30k English->French with the paper's kind of
# vocabulary, a shortlist, small enough that <unk> is common: two RNNsearch models trained side by
# side (seeds 1 and 2), then on test_2016_flickr: the best checkpoint, the average of the last 5
# end-of-epoch checkpoints (of fewer where BUDGET_MINUTES saved fewer, in a warning), each model
# alone and the 2-model ensemble, and unknown-word replacement (copying, and through a dictionary
# built from the model's attention), each in detokenized sacreBLEU and tokenized BLEU.
#
# Usage: bash scripts/run_multi30k_workflow.sh [OUT]      (default OUT: /tmp/multi30k-workflow)
# Run from anywhere with the project's environment active. Settings, from the environment:
#   SHORTLIST=2000      words per language (the rest is <unk>: how much, docs/results.md)
#   BUDGET_MINUTES=72   training time of each model (fairseq-train --stop-time-hours), both at once
#   and those of scripts/multi30k_recipe.sh: DIM, OPTIMIZER, LR, DROPOUT, BATCH, MULTI30K, EVALUATE_OPTIONS
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then  # its usage: the comment above
  sed -n '2,/^\[ -n/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
out=$(realpath -m -- "${1:-/tmp/multi30k-workflow}")  # -- : a folder named -x is a folder
SHORTLIST=${SHORTLIST:-2000}
BUDGET_MINUTES=${BUDGET_MINUTES:-72}
# shellcheck source=scripts/multi30k_recipe.sh
source "$repo/scripts/multi30k_recipe.sh"
set_stop_time_hours  # checked before anything runs, as the others below
check_no_colon OUT "$out"
check_multi30k_folder
data="$out/data"
threads=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
mkdir -p "$out"
cd "$repo"

echo "== $(date +%T) preparing Multi30k, shortlist of $SHORTLIST words -> $data"
bahdanau-prepare-data multi30k --from-dir "$MULTI30K" --out "$data" --shortlist "$SHORTLIST" --max-len 50

: > "$out/commands.txt"  # this run's commands
trap 'interrupted 2' INT
trap 'interrupted 15' TERM
for seed in 1 2; do
  mkdir -p "$out/seed$seed"
  command=(fairseq-train "$data/data-bin" --save-dir "$out/seed$seed" --user-dir bahdanau_plugin --arch rnnsearch
    "${sizes[@]}" --attention-dim "$DIM" "${recipe[@]}" --cpu --seed "$seed" --stop-time-hours "$hours"
    --save-interval-updates 200 --keep-interval-updates 10 --skip-invalid-size-inputs-valid-test
    --data-buffer-size 0 --log-format simple --log-interval 50)
  # as a shell reads it back: a path with spaces quoted
  { printf 'OMP_NUM_THREADS=%s' "$threads"; printf ' %q' "${command[@]}"; echo; } >> "$out/commands.txt"
  echo "== $(date +%T) training seed $seed for $BUDGET_MINUTES min; log: $out/seed$seed/train.log"
  OMP_NUM_THREADS=$threads start_training "seed $seed" "$out/seed$seed/train.log" "${command[@]}"
done
wait_for_the_trainings
trap - INT TERM  # the tools below answer Ctrl+C themselves

# The average of seed 1's last 5 end-of-epoch checkpoints, or of as many as a short BUDGET_MINUTES
# saved: bahdanau-average-checkpoints refuses to average 5 of fewer, which ended the run after the
# trainings, nothing evaluated.
shopt -s nullglob
epoch_checkpoints=("$out/seed1"/checkpoint[0-9]*.pt)
shopt -u nullglob
last=$(( ${#epoch_checkpoints[@]} < 5 ? ${#epoch_checkpoints[@]} : 5 ))
average_model=()
if (( last == 0 )); then
  echo "warning: seed 1 saved no end-of-epoch checkpoint in $BUDGET_MINUTES min (its training was shorter than an epoch): no average is evaluated; raise BUDGET_MINUTES for one" >&2
elif (( last < 5 )); then
  echo "warning: seed 1 saved $last end-of-epoch checkpoints in $BUDGET_MINUTES min, not 5: seed1_average_last$last is the average of those $last; raise BUDGET_MINUTES for 5" >&2
fi
if (( last > 0 )); then
  echo "== $(date +%T) averaging the last $last end-of-epoch checkpoints of seed 1"
  bahdanau-average-checkpoints --inputs "$out/seed1" --last-epochs "$last" --output "$out/seed1/average_last$last.pt"
  average_model=(--model "seed1_average_last$last=$out/seed1/average_last$last.pt")
fi

echo "== $(date +%T) the --replace-unk dictionary, from seed 1's attention on the training data"
bahdanau-unk-dictionary --checkpoint "$out/seed1/checkpoint_best.pt" --data "$data/data-bin" \
  --source "$data/tok/train.en" --target "$data/tok/train.fr" --output "$out/unk-dictionary.txt"

evaluate() {  # OUT_NAME, then bahdanau-evaluate options
  local name=$1
  shift
  echo "== $(date +%T) evaluating: $name"
  bahdanau-evaluate --data "$data/data-bin" --out-dir "$out/evaluation/$name" "$@" "${evaluate_options[@]}"
}
best1=$out/seed1/checkpoint_best.pt best2=$out/seed2/checkpoint_best.pt
evaluate models --model "seed1_best=$best1" "${average_model[@]}" \
  --model "seed1_last=$out/seed1/checkpoint_last.pt" --model "seed2_best=$best2" --model "ensemble=$best1:$best2"
evaluate replace_unk_copy --model "seed1_best=$best1" --model "ensemble=$best1:$best2" --replace-unk
evaluate replace_unk_dictionary --model "seed1_best=$best1" --model "ensemble=$best1:$best2" \
  --replace-unk "$out/unk-dictionary.txt"
echo "== $(date +%T) done: $out/commands.txt, $out/evaluation/*/bleu.txt"
