"""Run the GPU kit's sections (bench/gpu/__init__.py) and write the report.

Each section computes afresh in a work folder of its own, per device (WORK/DEVICE/SECTION, emptied
when the section starts), so that nothing a dry run or an earlier run left is read again. As soon
as a section ends, its result is written and the report rebuilt from every result present; with
``$OUT`` set (the device tool's folder that comes back), both are copied there too, so that a run
stopped part-way returns what it finished. On a GPU the sections run in two parts, each within one
10-minute command of the device tool (docs/gpu-kit.md); the first prints the command of the second.
The exit status is 1 if any section, or any measurement within one, ended in an error.
"""

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from ..common import REPO
from . import environment, equivalence, paper_size, precision_training, report, step_profile
from . import unit_tests
from .kit import Kit

SECTIONS = {
    "unit_tests": unit_tests.run,
    "precision_training": precision_training.run,
    "equivalence": equivalence.run,
    "paper_size": paper_size.run,
    "step_profile": step_profile.run,
}
# The two calls of a GPU run, each estimated under 9 minutes on one H100 (docs/gpu-kit.md).
PARTS = {
    1: ["unit_tests", "precision_training", "equivalence"],
    2: ["paper_size", "step_profile"],
}
NEXT_COMMAND = "bash bench/gpu/run.sh --part 2"


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="every section on the CPU at tiny sizes (what the test suite runs)",
    )
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--sections", nargs="+", choices=list(SECTIONS))
    chosen.add_argument(
        "--part", type=int, choices=sorted(PARTS), help="on a GPU, default 1: " + str(PARTS)
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="folder of the sections' results, one JSON file each (default: docs/gpu, or "
        "WORK/cpu/results for a dry run, which writes nothing git tracks)",
    )
    parser.add_argument(
        "--report", type=Path, help="default: docs/gpu.md, or WORK/cpu/gpu.md for a dry run"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/bahdanau-gpu-kit"))
    args = parser.parse_args()
    device = "cpu" if args.dry_run else "cuda"
    if args.sections is None:
        args.sections = list(SECTIONS) if args.dry_run else PARTS[args.part or 1]
    documents = args.work / device if args.dry_run else REPO / "docs"
    args.results = args.results or documents / ("results" if args.dry_run else "gpu")
    args.report = args.report or documents / "gpu.md"
    return args, device


def errors_in(run: dict) -> list:
    """The section's error, and those its measurements recorded within its result."""
    found = [run["error"]] if "error" in run else []

    def walk(value):
        if isinstance(value, dict):
            found.extend([value["error"]] if isinstance(value.get("error"), str) else [])
            for item in value.values():
                walk(item)

    walk(run.get("result"))
    return found


def run_section(name: str, kit: Kit, command: str, described: dict) -> dict:
    shutil.rmtree(kit.work, ignore_errors=True)
    kit.work.mkdir(parents=True)
    start = time.perf_counter()
    run = {"environment": described, "command": command}
    try:
        run["result"] = SECTIONS[name](kit)
    except Exception as error:  # recorded, and the next sections still run
        run["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}"
    run["seconds"] = time.perf_counter() - start
    return run


def deliver(results: Path, report_path: Path) -> None:
    """The report rebuilt from every result present, and both copied to $OUT if it is set."""
    report.write(results, report_path)
    out = os.environ.get("OUT")
    if out:
        for path in [*results.glob("*.json"), report_path]:
            shutil.copy(path, Path(out) / path.name)


def main():
    args, device = arguments()
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.exit("error: no CUDA device here: run the kit on a GPU machine, or --dry-run")
    args.results.mkdir(parents=True, exist_ok=True)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    command = ("python -m bench.gpu " + " ".join(sys.argv[1:])).strip()
    described = environment.describe(device)
    failed = []
    for name in args.sections:
        print(f"== {name}", flush=True)
        run = run_section(
            name, Kit(device=device, work=args.work / device / name), command, described
        )
        (args.results / f"{name}.json").write_text(json.dumps(run, indent=1) + "\n")
        deliver(args.results, args.report)
        print(json.dumps(run.get("result", run.get("error")))[:2000], flush=True)
        failed += [f"{name}: {error}" for error in errors_in(run)]
    print(report.write(args.results, args.report))
    if not args.dry_run and args.sections == PARTS[1]:
        print(f"next, in a call of its own: {NEXT_COMMAND}")
    if failed:
        sys.exit("error: " + "; ".join(failed))


if __name__ == "__main__":
    main()
