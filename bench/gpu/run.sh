#!/usr/bin/env bash
# The GPU kit in one command, on a machine with a CUDA build of torch (make gpu-check):
#   bash bench/gpu/run.sh [python -m bench.gpu options, e.g. --sections paper_size step_profile]
# Without fairseq importable, it installs .gpu-kit/ (bench/gpu/gather.sh) into a folder of its own,
# offline; then it runs every check, writing docs/gpu.md and the sections' results in docs/gpu/,
# and with $OUT set (the device tool's folder that comes back) copies them there too.
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
status=0
"$python" -m bench.gpu "$@" || status=$?
if [ -n "${OUT:-}" ]; then
  cp docs/gpu.md docs/gpu/*.json "$OUT"/ 2> /dev/null || true
fi
exit "$status"
