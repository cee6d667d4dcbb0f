#!/usr/bin/env bash
# Gathers what the GPU kit installs on a GPU machine that has no fairseq and reaches no package
# registry: wheels for CPython 3.12 on manylinux x86-64 (the GPU machines: Python 3.12, torch
# 2.11 with CUDA 13, numpy, regex, sacrebleu, tqdm, PyYAML, scikit-learn, torchaudio and pytest
# already there) into .gpu-kit/ (git-ignored; its size: docs/gpu-kit.md). Run it where PyPI is
# reachable:
#   bash bench/gpu/gather.sh          (or make gpu-kit)
# The versions are the ones `make setup` installs here. PYTHON_VERSION=3.11 gathers for 3.11.
[ -n "${BASH_VERSION:-}" ] || { echo "error: $0 is a bash script, which sh does not run: run it as bash $0" >&2; exit 2; }
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=.gpu-kit
python_version=${PYTHON_VERSION:-3.12}
rm -rf "$kit"
mkdir -p "$kit"
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$python_version" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --dest "$kit" \
  fairseq-fixed==0.12.3.1 hydra-core==1.3.2 omegaconf==2.3.0 bitarray==3.12.3
# hydra's grammar runtime is published as source only: built here into a wheel (pure Python).
python3 -m pip wheel --quiet --no-deps --wheel-dir "$kit" antlr4-python3-runtime==4.9.3
ls -1 "$kit"
du -sh "$kit"
