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
# What is kept of a failed run's output: its first failures' tracebacks, from the first.
OUTPUT_KEPT = 8000
DRY_RUN_TESTS = ["tests/bahdanau_plugin/modules/test_maxout_output.py"]
# pytest's options: each failure's short traceback, and a summary line for each
PYTEST_OPTIONS = ["-q", "-p", "no:cacheprovider", "--tb=short", "-rfE"]


def first_failures(output: str) -> str:
    """pytest's output from its first failure's traceback on (its tail where it has none): the
    causes, which a long list of failed tests' names would push out of the output's end."""
    start = re.search(r"^_{3,} \S.* _{3,}$", output, flags=re.MULTILINE)
    return output[start.start() :][:OUTPUT_KEPT] if start else output[-OUTPUT_KEPT:]


def run(kit: Kit) -> dict:
    tests = DRY_RUN_TESTS if kit.dry_run else TESTS
    started = kit.start("-m", "pytest", *PYTEST_OPTIONS, "--device", kit.device, *tests, tf32="off")
    try:
        output, failed = started.output(), False
    except RuntimeError:  # failures: the whole output, not the end the error carries
        output, failed = started.log.read_text(errors="replace"), True
    summary = re.findall(r"^=*\s*(\d+ (?:passed|failed).*?) in [\d.]+s", output, flags=re.MULTILINE)
    failures = re.findall(r"^FAILED (\S+)", output, flags=re.MULTILINE)
    return {
        "tests": tests,
        "summary": summary[-1] if summary else output.strip().splitlines()[-1],
        "failures": failures,
        "output": first_failures(output) if failed else "",
        "passed": not failed,
    }
