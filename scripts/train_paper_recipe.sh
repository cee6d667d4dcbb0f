#!/usr/bin/env bash
# The paper's training (Appendix B.2) with fairseq-train flags: the same recipe as
# configs/paper_training.yaml (tests/repository/test_configs.py checks that both give the same
# configuration). Adadelta (rho 0.95, epsilon 1e-6, learning rate 1.0), gradient L2 norm clipped at
# 1, minibatches of 80 sentences, the cost averaged over sentences, not target words
# (--sentence-avg, as the paper's: docs/recipes.md); the architecture brings the sizes and the
# length limit.
#
# Usage: bash scripts/train_paper_recipe.sh ARCH DATA SAVE_DIR [more fairseq-train options]
#   ARCH: rnnsearch_30, rnnsearch_50, rnnencdec_30 or rnnencdec_50 (or rnnsearch, rnnencdec);
#   later options win, e.g. --max-train-length 80 --stop-time-hours 24 (not --optimizer: the
#   recipe is Adadelta's)
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 ARCH DATA SAVE_DIR [more fairseq-train options]" >&2
  exit 2
fi
arch=$1 data=$2 save_dir=$3
shift 3
for option in "$@"; do
  case "$option" in
    --memory-efficient-fp16 | --memory-efficient-bf16)
      echo "error: $option does not support Adadelta, the paper's optimizer (fairseq refuses it: \"Unsupported optimizer: adadelta\"): use ${option/memory-efficient-/}, which keeps float32 master weights (docs/precision.md)" >&2
      exit 2 ;;
    # fairseq-train would refuse the recipe's --adadelta-rho and --adadelta-eps, not the option
    --optimizer | --optimizer=*)
      echo "error: --optimizer: the paper's recipe trains with Adadelta, and gives fairseq-train its --adadelta-rho and --adadelta-eps, which another optimizer does not take: for another optimizer, run fairseq-train itself, as docs/training.md's CPU recipe (Adam) does" >&2
      exit 2 ;;
  esac
done
# without a dictionary there, fairseq-train would end in a traceback
dictionaries=("$data"/dict.*.txt)
if [ ! -f "${dictionaries[0]}" ]; then
  echo "error: DATA $data is not a data-bin folder (no dict.*.txt): give the data-bin folder bahdanau-prepare-data wrote" >&2
  exit 2
fi
plugin="$(cd "$(dirname "$0")/.." && pwd)/bahdanau_plugin"
# fairseq-train's parser takes a word that starts with '-' for an option (DATA -data ended in 'the
# following arguments are required: data'): such a relative path goes to it as ./-data
for path in data save_dir; do
  if [[ ${!path} == -* ]]; then
    printf -v "$path" './%s' "${!path}"
  fi
done

exec fairseq-train "$data" --user-dir "$plugin" --arch "$arch" \
  --task translation --criterion cross_entropy --sentence-avg \
  --optimizer adadelta --adadelta-rho 0.95 --adadelta-eps 1e-6 --lr 1.0 --weight-decay 0.0 \
  --lr-scheduler fixed --clip-norm 1.0 \
  --batch-size 80 --required-batch-size-multiple 1 --skip-invalid-size-inputs-valid-test \
  --data-buffer-size 0 \
  --save-dir "$save_dir" "$@"
