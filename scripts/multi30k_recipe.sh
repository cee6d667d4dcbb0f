# The training recipe of docs/results.md's Multi30k runs, sourced by run_multi30k_experiment.sh
# and run_multi30k_workflow.sh (which set $repo): every setting can be changed from the environment.
#   DIM=256             embedding, hidden (per direction in the encoders), alignment and maxout size
#   OPTIMIZER=adam LR=3e-3 DROPOUT=0.2 BATCH=80   the optimizer, learning rate, dropout and sentences per batch
#   MULTI30K=<repo>/../shared/data/multi30k       the raw Multi30k files
#   EVALUATE_OPTIONS=""  more bahdanau-evaluate options (a quick check: "--beam 2 --max-len-b 20")
DIM=${DIM:-256}
OPTIMIZER=${OPTIMIZER:-adam} LR=${LR:-3e-3} DROPOUT=${DROPOUT:-0.2} BATCH=${BATCH:-80}
MULTI30K=${MULTI30K:-$repo/../shared/data/multi30k}
EVALUATE_OPTIONS=${EVALUATE_OPTIONS:-}
sizes=(--encoder-embed-dim "$DIM" --decoder-embed-dim "$DIM" --encoder-hidden-dim "$DIM" --decoder-hidden-dim "$DIM"
       --maxout-dim "$DIM")
recipe=(--optimizer "$OPTIMIZER" --lr "$LR" --clip-norm 1.0 --batch-size "$BATCH" --dropout "$DROPOUT")
