#!/usr/bin/env bash
# The GPU kit, on a machine with a CUDA build of torch (make gpu-check), every section in one
# command (its time on one H100: docs/gpu-kit.md, section 5):
#   bash bench/gpu/run.sh --copy-to DIR
# (any python -m bench.gpu options pass through, e.g. --sections paper_size). Without fairseq
# importable, it installs .gpu-kit/ (bench/gpu/gather.sh) into a folder of its own, offline; then
# it runs the sections, writing each section's result and the report into docs/gpu/, and with
# --copy-to DIR (or BAHDANAU_GPU_KIT_COPY_TO) copies them to DIR as soon as each section ends.
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
if ! "$python" -c "import fairseq" 2> /dev/null; then
  if ! ls .gpu-kit/*.whl > /dev/null 2>&1; then
    echo "error: fairseq is not installed and .gpu-kit/ holds no wheels: run bash bench/gpu/gather.sh where PyPI is reachable, and bring .gpu-kit along" >&2
    exit 2
  fi
  site=${GPU_KIT_SITE:-/tmp/bahdanau-gpu-kit-site}
  "$python" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .gpu-kit/*.whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
exec "$python" -m bench.gpu "$@"
