"""cpu_fast_path/cpu_class.py: the CPU class is the one torch's kernels dispatch to."""

import os
import subprocess
import sys


def _has_avx512_in_a_process_with(environment):
    probe = "from bahdanau_plugin.cpu_fast_path.cpu_class import has_avx512; print(has_avx512())"
    output = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return output.strip().splitlines()[-1] == "True"


def test_an_avx512_cpu_capped_at_avx2_counts_as_avx2():
    assert not _has_avx512_in_a_process_with({"ATEN_CPU_CAPABILITY": "avx2"})
