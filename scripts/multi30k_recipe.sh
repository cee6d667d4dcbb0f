# shellcheck shell=bash disable=SC2034  # sourced: its variables are for the scripts that source it
# The training recipe of docs/results.md's Multi30k runs, sourced by run_multi30k_experiment.sh
# and run_multi30k_workflow.sh (which set $repo): every setting can be changed from the environment.
#   DIM=256             embedding, hidden (per direction in the encoders), alignment and maxout size
#   OPTIMIZER=adam LR=3e-3 DROPOUT=0.2 BATCH=80   the optimizer, learning rate, dropout and sentences per batch
#   MULTI30K=<repo>/../shared/data/multi30k       the raw Multi30k files
#   EVALUATE_OPTIONS=""  more bahdanau-evaluate options (a quick check: "--beam 2 --max-len-b 20")
# Below the recipe: what both scripts share to check their settings and to run their trainings.
DIM=${DIM:-256}
OPTIMIZER=${OPTIMIZER:-adam} LR=${LR:-3e-3} DROPOUT=${DROPOUT:-0.2} BATCH=${BATCH:-80}
MULTI30K=$(realpath -m -- "${MULTI30K:-$repo/../shared/data/multi30k}")  # read from where the run starts
EVALUATE_OPTIONS=${EVALUATE_OPTIONS:-}
read -ra evaluate_options <<< "$EVALUATE_OPTIONS"  # a list of words, none of them a file pattern
sizes=(--encoder-embed-dim "$DIM" --decoder-embed-dim "$DIM" --encoder-hidden-dim "$DIM" --decoder-hidden-dim "$DIM"
       --maxout-dim "$DIM")
recipe=(--optimizer "$OPTIMIZER" --lr "$LR" --clip-norm 1.0 --batch-size "$BATCH" --required-batch-size-multiple 1
        --dropout "$DROPOUT")

refuse() {  # MESSAGE: a bad setting ends the run in one line, before anything runs
  echo "error: $1" >&2
  exit 2
}

# fairseq-train --stop-time-hours of BUDGET_MINUTES, into $hours. 0 is refused too: fairseq reads a
# limit of 0 hours as no limit at all, and the training would never stop.
set_stop_time_hours() {
  if [[ ! $BUDGET_MINUTES =~ ^[0-9]*[.]?[0-9]+$ || $BUDGET_MINUTES =~ ^[0.]+$ ]]; then
    refuse "BUDGET_MINUTES=$BUDGET_MINUTES is not a number of minutes over 0: give one such as 30 or 0.5"
  fi
  hours=$(python -c 'import sys; print(float(sys.argv[1]) / 60)' "$BUDGET_MINUTES")
}

check_multi30k_folder() {  # before preparing: prepare-data's own line would name its --from-dir, not MULTI30K
  if [ ! -d "$MULTI30K" ]; then
    refuse "MULTI30K=$MULTI30K is not a folder: set MULTI30K to the folder of the raw Multi30k files (train.en.gz, val.en.gz, test_2016_flickr.en.gz and their .fr)"
  fi
}

check_no_colon() {  # NAME PATH: fairseq's tools, and bahdanau-evaluate's ensembles, split paths at ':'
  if [[ $2 == *:* ]]; then
    refuse "$1 $2 has a ':' in its path, at which fairseq's tools split paths: give a folder whose path has none"
  fi
}

# The trainings run side by side in the background, each into its own log. Ctrl+C (or a SIGTERM
# to the script) stops them all; a training that fails stops the others, and the run, at once: the
# checkpoints on disk are kept, and the same command resumes from them.
if (( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501 )); then  # for wait -p, below
  refuse "this script needs bash 5.1 or later, and this is bash $BASH_VERSION"
fi
declare -A training_name=() training_log=()  # of each training still running, by PID
# Seconds a training has to end after Ctrl+C before it gets SIGTERM: one started just before has
# not always given Ctrl+C back yet (below), and would train on for its whole budget.
STOP_SECONDS=5

start_training() {  # NAME LOG COMMAND...
  # A shell starts background commands with SIGINT ignored; give it back, so that Ctrl+C reaches
  # the trainings as it does a training run in the foreground (fairseq-train then ends cleanly).
  ( trap - INT; exec "${@:3}" ) > "$2" 2>&1 &
  training_name[$!]=$1
  training_log[$!]=$2
}

stop_trainings() {
  if (( ${#training_name[@]} )); then
    kill -INT "${!training_name[@]}" 2> /dev/null || true  # some may have ended just now
    ( sleep "$STOP_SECONDS"; kill -TERM "${!training_name[@]}" 2> /dev/null || true ) &
    local last_resort=$!
    wait "${!training_name[@]}" 2> /dev/null || true
    kill "$last_resort" 2> /dev/null || true
  fi
  wait
}

interrupted() {  # SIGNAL_NUMBER
  stop_trainings
  echo "interrupted: rerun the same command to resume" >&2
  exit $((128 + $1))
}

wait_for_a_training() {  # the next to end; a failed one ends the run with its log's last line
  local pid status=0
  wait -n -p pid "${!training_name[@]}" || status=$?
  local name=${training_name[$pid]} log=${training_log[$pid]}
  unset "training_name[$pid]" "training_log[$pid]"
  if (( status != 0 )); then
    stop_trainings
    echo "error: $name's training failed (exit $status): see $log, which ends: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1)" >&2
    exit 1
  fi
}

wait_for_the_trainings() {
  while (( ${#training_name[@]} )); do wait_for_a_training; done
}
