"""Run the GPU kit's sections (bench/gpu/__init__.py) and write the report.

Each section computes afresh in a work folder of its own, per device (WORK/DEVICE/SECTION, emptied
when the section starts), so that nothing a dry run or an earlier run left is read again. As soon
as a section ends, its result is written and the report rebuilt from every result present; with
``--copy-to DIR`` (or BAHDANAU_GPU_KIT_COPY_TO), both are copied to DIR too, so that a run stopped
part-way leaves there what it finished. Every section runs in one command (its time on one H100:
docs/gpu-kit.md, section 5); each prints its time as it ends. The exit status is 1 if
any section, or any measurement within one, ended in an error.
"""

import argparse
import importlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from ..paths import REPO
from . import environment, report
from .kit import Kit

# The sections, in the order a run takes them: bench/gpu/NAME.py, each with run(kit) -> result.
# The tests come first, then the measurements of speed, then the other checks.
SECTIONS = (
    "unit_tests",
    "recurrence",
    "step_profile",
    "paper_size",
    "equivalence",
    "distributed",
    "precision_training",
)
COPY_TO = "BAHDANAU_GPU_KIT_COPY_TO"


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="every section on the CPU at tiny sizes (what the test suite runs)",
    )
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument(
        "--results",
        type=Path,
        help="folder of the sections' results, one JSON file each (default: docs/gpu, or "
        "WORK/cpu/results for a dry run, which writes nothing git tracks)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        help="default: docs/gpu/latest.md, or WORK/cpu/results/latest.md for a dry run",
    )
    parser.add_argument(
        "--copy-to",
        type=Path,
        default=os.environ.get(COPY_TO) or None,
        help="a folder that each result and the rebuilt report are copied to as each section "
        f"ends, e.g. one that comes back from the GPU machine (default: ${COPY_TO}, if set)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/bahdanau-gpu-kit"))
    args = parser.parse_args()
    if args.copy_to is not None and not args.copy_to.is_dir():
        parser.error(f"--copy-to {args.copy_to}: no such folder")
    device = "cpu" if args.dry_run else "cuda"
    args.results = args.results or (
        args.work / device / "results" if args.dry_run else REPO / "docs" / "gpu"
    )
    args.report = args.report or args.results / "latest.md"
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
        run["result"] = importlib.import_module(f"{__package__}.{name}").run(kit)
    except Exception as error:  # recorded, and the next sections still run
        run["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}"
    run["seconds"] = time.perf_counter() - start
    return run


def deliver(results: Path, report_path: Path, copy_to) -> None:
    """The report rebuilt from every result present, and both copied to ``copy_to`` if given."""
    report.write(results, report_path)
    if copy_to is not None:
        for path in [*results.glob("*.json"), report_path]:
            shutil.copy(path, copy_to / path.name)


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
    failed, seconds = [], {}
    for name in args.sections:
        print(f"== {name}", flush=True)
        run = run_section(
            name, Kit(device=device, work=args.work / device / name), command, described
        )
        (args.results / f"{name}.json").write_text(json.dumps(run, indent=1) + "\n")
        deliver(args.results, args.report, args.copy_to)
        print(json.dumps(run.get("result", run.get("error")))[:2000], flush=True)
        seconds[name] = run["seconds"]
        print(f"== {name}: {run['seconds']:.0f} s", flush=True)
        failed += [f"{name}: {error}" for error in errors_in(run)]
    print(report.write(args.results, args.report))
    times = ", ".join(f"{name} {value:.0f} s" for name, value in seconds.items())
    print(f"== sections: {times}; {sum(seconds.values()):.0f} s in all", flush=True)
    if failed:
        sys.exit("error: " + "; ".join(failed))


if __name__ == "__main__":
    main()
