#!/usr/bin/env python3
"""A short sweep of training recipes for RNNsearch on Multi30k En->Fr (BPE), at equal updates.

Phase 1 compares the paper's Adadelta (rho 0.95, epsilon 1e-6, learning rate 1.0) with Adam at
three learning rates, all with batches of 80 sentences and no dropout. Phase 2 takes the Adam
learning rate with the lowest validation loss and changes one setting at a time: dropout, and
smaller batches (at equal updates, and at as many updates again as equal training pairs need).
Every run clips the gradient norm at 1, uses seed 1 and one thread; `--jobs` runs go at once.

Prints a markdown table (validation loss after the budget, pairs seen, CPU time of each run) and
writes it with every training log under --out. Not part of the test suite: about 16 minutes on
2 cores with the defaults. docs/recipes.md records its output.
"""

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench import benchmark  # its model flags at matched sizes

REPO = Path(__file__).resolve().parents[1]
PLUGIN = str(REPO / "bahdanau_plugin")
PAPER_BATCH = 80
VALID_LINE = re.compile(
    r"valid on 'valid' subset \| loss ([\d.]+) \| ppl ([\d.]+) .*\| num_updates (\d+)"
)


@dataclass(frozen=True)
class Recipe:
    optimizer: str
    lr: float
    dropout: float = 0.0
    batch: int = PAPER_BATCH
    updates: int = 0

    @property
    def name(self):
        return (
            f"{self.optimizer}-lr{self.lr:g}-dropout{self.dropout:g}-batch{self.batch}"
            f"-updates{self.updates}"
        )

    def flags(self):
        if self.optimizer == "adadelta":  # the paper's, as scripts/train_paper_recipe.sh
            optimizer = [
                "--optimizer",
                "adadelta",
                "--adadelta-rho",
                "0.95",
                "--adadelta-eps",
                "1e-6",
            ]
        else:
            optimizer = ["--optimizer", self.optimizer]
        return [
            *optimizer,
            "--lr",
            f"{self.lr:g}",
            "--dropout",
            f"{self.dropout:g}",
            "--batch-size",
            str(self.batch),
            "--max-update",
            str(self.updates),
        ]


@dataclass(frozen=True)
class Result:
    recipe: Recipe
    valid_loss: float
    valid_ppl: float
    cpu_seconds: float


def model_flags(dim):
    """RNNsearch with every size at dim, as scripts/run_multi30k_experiment.sh trains it."""
    sizes = argparse.Namespace(embed=dim, hidden=dim, maxout=dim)
    return [str(flag) for flag in benchmark.model_flags("rnnsearch", sizes)]


def train(recipe, arguments):
    """Train one recipe from scratch; its validation loss at the end and the CPU time it took."""
    log_path = arguments.out / f"{recipe.name}.log"
    # --no-save: only the validation loss is wanted; fairseq still makes --save-dir, so not in the
    # cwd
    command = [
        "fairseq-train",
        str(arguments.data),
        "--user-dir",
        PLUGIN,
        *model_flags(arguments.dim),
        *recipe.flags(),
        "--data-buffer-size",
        "0",
        "--clip-norm",
        "1.0",
        "--cpu",
        "--seed",
        "1",
        "--no-save",
        "--save-dir",
        str(arguments.out / "unused"),
        "--skip-invalid-size-inputs-valid-test",
        "--log-format",
        "simple",
        "--log-interval",
        "50",
    ]
    # one thread each: --jobs runs share the cores without oversubscribing them
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    report_progress(f"training {recipe.name}")
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: fairseq-train failed for {recipe.name}; see {log_path}")
    loss, ppl, updates = VALID_LINE.findall(log_path.read_text())[-1]
    assert int(updates) == recipe.updates, f"{recipe.name} stopped at update {updates}"
    result = Result(recipe, float(loss), float(ppl), usage.ru_utime + usage.ru_stime)
    report_progress(
        f"{recipe.name}: valid loss {result.valid_loss:.2f} after {result.cpu_seconds / 60:.1f} "
        "CPU minutes"
    )
    return result


def report_progress(line):
    sys.stdout.write(line + "\n")  # one write, so that lines of parallel runs do not interleave
    sys.stdout.flush()


def train_all(recipes, arguments):
    with ThreadPoolExecutor(arguments.jobs) as pool:
        return list(pool.map(lambda recipe: train(recipe, arguments), recipes))


def first_phase(arguments):
    """The paper's Adadelta and Adam at each learning rate, batches of 80, no dropout."""
    return [Recipe("adadelta", 1.0, updates=arguments.updates)] + [
        Recipe("adam", lr, updates=arguments.updates) for lr in arguments.adam_lrs
    ]


def second_phase(best, arguments):
    """One change at a time from the best Adam run: dropout, then smaller batches."""
    pairs = best.updates * best.batch
    small = arguments.small_batch
    return [
        Recipe(best.optimizer, best.lr, dropout=arguments.dropout, updates=best.updates),
        Recipe(best.optimizer, best.lr, batch=small, updates=best.updates),
        Recipe(best.optimizer, best.lr, batch=small, updates=pairs // small),
    ]


def table(results):
    lines = [
        "| optimizer | learning rate | dropout | batch | updates | training pairs seen | CPU time "
        "| valid loss | valid ppl |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        recipe = result.recipe
        optimizer = (
            "Adadelta (ρ 0.95, ε 1e-6), the paper's" if recipe.optimizer == "adadelta" else "Adam"
        )
        lines.append(
            f"| {optimizer} | {recipe.lr:g} | {recipe.dropout:g} | {recipe.batch} | "
            f"{recipe.updates:,} | {recipe.updates * recipe.batch:,} | "
            f"{result.cpu_seconds / 60:.1f} min | {result.valid_loss:.2f} | "
            f"{result.valid_ppl:.1f} |"
        )
    return "\n".join(lines)


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=Path("/tmp/multi30k-bpe10k/data-bin"),
        help="binarized Multi30k (scripts/prepare_multi30k.py --bpe 10000 --max-len 50)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/recipe-sweep"), help="training logs and the table"
    )
    parser.add_argument(
        "--updates", type=int, default=400, help="updates of each run with batches of 80"
    )
    parser.add_argument(
        "--dim", type=int, default=256, help="every size of the model (docs/results.md: 256)"
    )
    parser.add_argument("--adam-lrs", type=float, nargs="+", default=[1e-3, 3e-3, 1e-2])
    parser.add_argument(
        "--dropout", type=float, default=0.2, help="the dropout tried on the best Adam run"
    )
    parser.add_argument(
        "--small-batch", type=int, default=32, help="the batch size tried on the best Adam run"
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count(), help="runs at once, one thread each"
    )
    arguments = parser.parse_args()
    if not (arguments.data / "dict.en.txt").is_file():
        parser.error(
            f"{arguments.data} holds no prepared data; run python scripts/prepare_multi30k.py "
            "--from-dir ../shared/data/multi30k --out /tmp/multi30k-bpe10k --bpe 10000 --max-len 50"
        )
    return arguments


def main():
    arguments = parse_arguments()
    arguments.out.mkdir(parents=True, exist_ok=True)
    results = train_all(first_phase(arguments), arguments)
    best = min(
        (result for result in results if result.recipe.optimizer == "adam"),
        key=lambda result: result.valid_loss,
    )
    results += train_all(second_phase(best.recipe, arguments), arguments)
    report = table(results)
    (arguments.out / "table.md").write_text(report + "\n")
    print(report)


if __name__ == "__main__":
    main()
