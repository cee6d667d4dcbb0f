"""Section: the tests that build models, run on the GPU.

pytest's ``--device`` (tests/conftest.py) makes torch's factories build the tests' models and
batches there; TF32 is off, since the tests hold float32 to 1e-5. Tests of CPU-only behaviour
(glibc's malloc, a missing C++ compiler) are skipped there; the fast path's tests run its CUDA
graphs and its step compiled by Triton.
"""

import re

from .kit import Kit

TESTS = [
    "tests/bahdanau_plugin/models/test_paper_equations.py",
    "tests/bahdanau_plugin/models/test_decoding.py",
    "tests/bahdanau_plugin/modules",
    "tests/bahdanau_plugin/speed",
]
# The end of pytest's output kept in the result: the failures' short tracebacks.
OUTPUT_KEPT = 8000
DRY_RUN_TESTS = ["tests/bahdanau_plugin/modules/test_maxout_output.py"]


def run(kit: Kit) -> dict:
    tests = DRY_RUN_TESTS if kit.dry_run else TESTS
    try:
        output = kit.python(
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--tb=short",
            "-rfE",
            "--device",
            kit.device,
            *tests,
            tf32="off",
        )
        failed = False
    except RuntimeError as error:  # failures: their summary is in the message
        output, failed = str(error), True
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?) in [\d.]+s", output, flags=re.MULTILINE)
    failures = re.findall(r"^FAILED (\S+)", output, flags=re.MULTILINE)
    return {
        "tests": tests,
        "summary": summary[-1] if summary else output.strip().splitlines()[-1],
        "failures": failures,
        "output": output[-OUTPUT_KEPT:] if failed else "",
        "passed": not failed,
    }
