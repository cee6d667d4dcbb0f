"""Run the GPU kit's sections (bench/gpu/__init__.py) and write the report."""

import argparse
import json
import sys
import time
from pathlib import Path

from . import environment, equivalence, paper_size, precision_training, report, step_profile
from . import unit_tests
from ..common import REPO
from .kit import Kit

SECTIONS = {  # in this order: equivalence translates with precision_training's float32 model
    "unit_tests": unit_tests.run,
    "precision_training": precision_training.run,
    "equivalence": equivalence.run,
    "paper_size": paper_size.run,
    "step_profile": step_profile.run,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="every section on the CPU at tiny sizes (what the test suite runs)",
    )
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument(
        "--results",
        type=Path,
        default=REPO / "docs" / "gpu",
        help="folder of the sections' results, one JSON file each",
    )
    parser.add_argument("--report", type=Path, default=REPO / "docs" / "gpu.md")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bahdanau-gpu-kit"))
    args = parser.parse_args()
    device = "cpu" if args.dry_run else "cuda"
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.exit("error: no CUDA device here: run the kit on a GPU machine, or --dry-run")
    kit = Kit(device=device, work=args.work)
    args.work.mkdir(parents=True, exist_ok=True)
    args.results.mkdir(parents=True, exist_ok=True)
    command = "python -m bench.gpu " + " ".join(sys.argv[1:])
    described = environment.describe(device)
    for name in args.sections:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        run = {"environment": described, "command": command.strip()}
        try:
            run["result"] = SECTIONS[name](kit)
        except Exception as error:  # recorded, and the next sections still run
            run["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}"
        run["seconds"] = time.perf_counter() - start
        (args.results / f"{name}.json").write_text(json.dumps(run, indent=1) + "\n")
        print(json.dumps(run.get("result", run.get("error")))[:2000], flush=True)
    print(report.write(args.results, args.report))


if __name__ == "__main__":
    main()
