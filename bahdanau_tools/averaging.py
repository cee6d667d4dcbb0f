"""bahdanau-average-checkpoints: one checkpoint whose parameters are the mean of several
checkpoints'.

  bahdanau-average-checkpoints --inputs checkpoints --last-epochs 5 --output checkpoints/average.pt
  bahdanau-average-checkpoints --inputs checkpoints --last-updates 5 --output checkpoints/average.pt
  bahdanau-average-checkpoints --inputs a.pt b.pt c.pt --output average.pt

Checkpoints are loaded with torch's safe, weights-only unpickler (the plugin allow-lists the one
type fairseq adds). Checkpoints of other architectures, sizes or dictionaries (their fingerprints,
bahdanau_plugin/fingerprints.py; the dictionaries' sizes for checkpoints saved before them), of
opposite directions (the languages their training was given, or inferred from its data-bin), files
that fairseq-train did not write (a bare state_dict) and a checkpoint named twice are refused;
checkpoints whose training started from other parameters (not of one run) are averaged after a
warning, as their average is worse than either, and so is an earlier average among them. The
output is the newest input (of most updates, in whatever order the inputs are named) with its
parameters averaged (its fingerprints kept) and without its optimizer state (the optimizer's
moments belong to one point of training, not to the average): fairseq-generate,
fairseq-interactive and the hub interface load it as they load any checkpoint, and fairseq-train
starts a fresh optimizer from it (--restore-file).
"""

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch

from bahdanau_plugin import fingerprints
from bahdanau_plugin.checkpoint_safety import explain_load_error, trained_direction
from bahdanau_plugin.checkpoint_writing import CheckpointSaveError, os_error, replacing_whole
from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_plugin.options import path_argument, positive_int
from bahdanau_plugin.output_folder import (
    WRITE_FAILURES,
    cause,
    check_no_input_replaced,
    output_file,
    remedy,
)

from .errors import AveragingError

# fairseq's names: checkpoint{epoch}.pt at the end of an epoch, checkpoint_{epoch}_{update}.pt
# every --save-interval-updates
EPOCH_CHECKPOINT = re.compile(r"checkpoint(\d+)\.pt")
UPDATE_CHECKPOINT = re.compile(r"checkpoint_\d+_(\d+)\.pt")
EMBEDDINGS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")
# Where the average records the checkpoints it is the mean of, in its extra_state.
AVERAGED_CHECKPOINTS = "averaged_checkpoints"


def last_checkpoints(directory: Path, count: int, numbered: re.Pattern, kind: str) -> List[Path]:
    """The count checkpoints of the directory with the highest numbers, oldest first."""
    found = sorted(
        (int(match.group(1)), path)
        for path in directory.glob("*.pt")
        if (match := numbered.fullmatch(path.name))
    )
    if len(found) < count:
        raise AveragingError(
            f"{directory} holds {len(found)} {kind} checkpoints, fewer than the {count} to "
            f"average: ask for fewer, or give the checkpoints themselves"
        )
    return [path for _, path in found[-count:]]


def check_each_named_once(paths: Sequence[Path]) -> None:
    """A checkpoint named twice (by one path, or by two that lead to one file: x/../a.pt and a.pt)
    would be averaged once, or counted twice: refused."""
    named: Dict[Path, List[Path]] = {}
    for path in paths:
        named.setdefault(path.resolve(), []).append(path)
    for names in named.values():
        if len(names) > 1:
            spellings = dict.fromkeys(map(str, names))
            how = (
                f"{len(names)} times"
                if len(spellings) == 1
                else f"more than once (as {' and '.join(spellings)})"
            )
            raise AveragingError(
                f"--inputs names checkpoint {names[0]} {how}: name each checkpoint to average once"
            )


def check_is_a_fairseq_checkpoint(path: Path, state) -> None:
    """A file torch loads that fairseq-train did not write (a model's state_dict saved by
    torch.save, say) has no parameters under "model" and no configuration ("cfg", or the "args"
    of checkpoints from before hydra): refused, naming it."""
    if not isinstance(state, dict):
        what = f"it holds a {type(state).__name__}, not the entries of a checkpoint"
    else:
        absent = [
            f'"{entry}"'
            for entry, present in (
                ("model", isinstance(state.get("model"), dict)),
                ("cfg", state.get("cfg") is not None or state.get("args") is not None),
            )
            if not present
        ]
        if not absent:
            return
        what = (
            'it has no "model" and "cfg" entries (a model\'s state_dict saved by torch.save?)'
            if len(absent) == 2
            else f"it has no {absent[0]} entry"
        )
    raise AveragingError(
        f"{path} is not a fairseq checkpoint: {what}; give checkpoints written by fairseq-train"
    )


def load_state(path: Path) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise AveragingError(f"checkpoint {path} not found") from None
    except Exception as error:
        explanation = explain_load_error(path, error)
        if explanation is None:
            raise
        raise AveragingError(explanation) from None
    check_is_a_fairseq_checkpoint(path, state)
    return state


def model_name(state: dict) -> str:
    if state.get("cfg") is None:  # a checkpoint from before hydra: its argparse.Namespace only
        return state["args"].arch
    model = state["cfg"]["model"]  # a dict, or the argparse.Namespace hydra's conversion kept
    return model["_name"] if isinstance(model, dict) else model.arch


def parameter_names(state: dict) -> List[str]:
    """The names of a checkpoint's parameters, without its fingerprints."""
    return [name for name in state["model"] if name not in fingerprints.KEYS]


def check_same_model(states: Dict[Path, dict]) -> None:
    """Parameters can only be averaged between checkpoints of one architecture, sizes and
    dictionaries."""
    (first_path, first), *others = states.items()
    for path, state in others:
        names = (model_name(first), model_name(state))
        if set(parameter_names(first)) != set(parameter_names(state)):
            raise AveragingError(
                f"cannot average {first_path} ({names[0]}) and {path} ({names[1]}): they are "
                "different architectures; average checkpoints of one training run"
            )
        for side, key in fingerprints.DICTIONARIES.items():
            recorded = (first["model"].get(key), state["model"].get(key))
            if fingerprints.differs(*recorded):
                raise AveragingError(
                    f"cannot average {first_path} and {path}: they were trained with other "
                    f"{side} dictionaries (fingerprints {fingerprints.short(recorded[0])} and "
                    f"{fingerprints.short(recorded[1])}); average checkpoints of one training run"
                )
        for name in EMBEDDINGS:
            sizes = (first["model"][name].size(0), state["model"][name].size(0))
            if sizes[0] != sizes[1]:
                side = name.split(".")[0]
                raise AveragingError(
                    f"cannot average {first_path} and {path}: their {side} dictionaries have "
                    f"{sizes[0]} and {sizes[1]} symbols; average checkpoints of one training run"
                )
        for name in parameter_names(first):
            parameter = first["model"][name]
            if parameter.shape != state["model"][name].shape:
                raise AveragingError(
                    f"cannot average {first_path} and {path}: {name} has shape "
                    f"{tuple(parameter.shape)} in one and {tuple(state['model'][name].shape)} in "
                    "the other; average checkpoints of one training run"
                )


def check_same_direction(states: Dict[Path, dict]) -> None:
    """Checkpoints that translate between the same languages the other way round (a joined
    dictionary serves both, and two runs of one --seed start from the same parameters) pass every
    other check: their average translates in neither direction."""
    (first_path, first), *others = states.items()
    for path, state in others:
        directions = (trained_direction(first), trained_direction(state))
        if None not in directions and directions[0] == directions[1][::-1]:
            raise AveragingError(
                f"cannot average {first_path} ({'->'.join(directions[0])}) and {path} "
                f"({'->'.join(directions[1])}): they translate in opposite directions; average "
                "checkpoints of one training run"
            )


def warn_unless_of_one_run(states: Dict[Path, dict]) -> None:
    """A warning, on stderr, for checkpoints whose training started from other parameters (the
    fingerprint each records, where it does)."""
    (first_path, first), *others = states.items()
    recorded = first["model"].get(fingerprints.INITIAL_PARAMETERS)
    for path, state in others:
        if fingerprints.differs(recorded, state["model"].get(fingerprints.INITIAL_PARAMETERS)):
            print(
                f"warning: {first_path} and {path} are not of one training run: their training "
                "started from other parameters (another --seed or initial model), so their "
                "average may translate worse than either; average checkpoints of one run",
                file=sys.stderr,
                flush=True,
            )
            return


def warn_of_averages_among_them(states: Dict[Path, dict]) -> None:
    """A warning, on stderr, for an input that is itself an average (this tool's output records
    its checkpoints): averaged again with others, its checkpoints weigh less than the others, and
    one also named directly (SAVE_DIR/average.pt beside SAVE_DIR's checkpoints) weighs more."""
    if len(states) < 2:
        return
    for path, state in states.items():
        averaged = (state.get("extra_state") or {}).get(AVERAGED_CHECKPOINTS)
        if averaged:
            print(
                f"warning: {path} is itself the average of {len(averaged)} checkpoints "
                f"({', '.join(averaged)}): averaged again with others, they are not weighed as "
                "the other inputs, so this is not their even mean; to average them evenly, give "
                "the checkpoints themselves",
                file=sys.stderr,
                flush=True,
            )


def updates(state: dict) -> Optional[int]:
    """The updates a checkpoint's training had made, where fairseq recorded them."""
    history = state.get("optimizer_history") or [{}]
    return history[-1].get("num_updates")


def check_each_copy_once(states: Dict[Path, dict]) -> None:
    """fairseq saves one point of training under several names (checkpoint_best.pt and
    checkpoint_last.pt are copies of the numbered one): two files holding the same parameters
    would count that point twice, so a glob such as DIR/*.pt is refused. Only checkpoints at the
    same update are compared."""
    seen: Dict[Optional[int], List[Path]] = {}
    for path, state in states.items():
        for other in seen.setdefault(updates(state), []):
            if all(
                torch.equal(parameter, states[other]["model"][name])
                for name, parameter in state["model"].items()
            ):
                raise AveragingError(
                    f"{other} and {path} hold the same parameters (update {updates(state)}): "
                    "they are one checkpoint under two names (fairseq copies checkpoint_best.pt "
                    "and checkpoint_last.pt from a numbered one): name each once"
                )
        seen[updates(state)].append(path)


def newest_checkpoint(states: Dict[Path, dict]) -> Path:
    """The checkpoint of the latest point of training: the one of most updates, where fairseq
    recorded them, the last named among equals. Not merely the last named: a shell's glob names
    checkpoint10.pt before checkpoint9.pt, and the average takes the newest's place in training
    (its updates and epoch: fairseq-train --restore-file goes on from the epoch after it)."""
    # max keeps the first of equals: the last named, read backwards
    return max(reversed(list(states)), key=lambda path: updates(states[path]) or 0)


def average_parameters(
    models: Sequence[Dict[str, torch.Tensor]], newest: Dict[str, torch.Tensor]
) -> Dict[str, torch.Tensor]:
    """The mean of each parameter, summed in float64 and returned in the newest model's type; its
    fingerprints as they are."""
    return {
        name: (
            newest[name]
            if name in fingerprints.KEYS
            else (sum(model[name].double() for model in models) / len(models)).to(parameter.dtype)
        )
        for name, parameter in newest.items()
    }


def averaged_checkpoint(paths: Sequence[Path]) -> dict:
    check_each_named_once(paths)
    states = {path: load_state(path) for path in paths}
    check_same_model(states)
    check_same_direction(states)
    check_each_copy_once(states)
    warn_unless_of_one_run(states)
    warn_of_averages_among_them(states)
    newest = dict(states[newest_checkpoint(states)])
    newest["model"] = average_parameters(
        [state["model"] for state in states.values()], newest["model"]
    )
    newest.pop("last_optimizer_state", None)
    newest.setdefault("extra_state", {})[AVERAGED_CHECKPOINTS] = [str(path) for path in paths]
    return newest


def averaging_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bahdanau-average-checkpoints",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--inputs",
        type=path_argument,
        nargs="+",
        required=True,
        help="the checkpoints to average, or with --last-epochs/--last-updates the folder "
        "holding them (fairseq-train's --save-dir)",
    )
    last = parser.add_mutually_exclusive_group()
    last.add_argument(
        "--last-epochs",
        type=positive_int,
        metavar="N",
        help="average the N end-of-epoch checkpoints (checkpointEPOCH.pt) of the highest epochs",
    )
    last.add_argument(
        "--last-updates",
        type=positive_int,
        metavar="N",
        help="average the N checkpoints saved every --save-interval-updates "
        "(checkpoint_EPOCH_UPDATE.pt) of the highest updates",
    )
    parser.add_argument(
        "--output", type=path_argument, required=True, help="the averaged checkpoint to write"
    )
    return parser


def input_checkpoints(arguments: argparse.Namespace) -> List[Path]:
    if arguments.last_epochs is None and arguments.last_updates is None:
        return arguments.inputs
    if len(arguments.inputs) == 1 and not arguments.inputs[0].exists():
        raise AveragingError(
            f"--inputs {arguments.inputs[0]} not found: give the --save-dir of the training run "
            "(read from the current directory)"
        )
    if len(arguments.inputs) != 1 or not arguments.inputs[0].is_dir():
        raise AveragingError(
            "--last-epochs and --last-updates take one folder as --inputs, the --save-dir of the "
            "training run"
        )
    if arguments.last_epochs is not None:
        return last_checkpoints(
            arguments.inputs[0], arguments.last_epochs, EPOCH_CHECKPOINT, "end-of-epoch"
        )
    return last_checkpoints(
        arguments.inputs[0], arguments.last_updates, UPDATE_CHECKPOINT, "update"
    )


def write_whole(checkpoint: dict, output: Path) -> None:
    """The checkpoint written whole (checkpoint_writing.replacing_whole: a file under the output's
    name is always complete, and a write that fails leaves nothing); a disk that cannot take it
    ends the command in one line."""
    try:
        with replacing_whole(str(output)) as file:
            torch.save(checkpoint, file)
    except CheckpointSaveError as error:
        reason = os_error(error)
        why = f"{cause(reason)}; {remedy(reason)}" if reason.errno in WRITE_FAILURES else reason
        raise AveragingError(f"writing {output} failed: {why}") from None


def main(argv: Optional[Sequence[str]] = None) -> List[Path]:
    """Write the averaged checkpoint; return the checkpoints averaged."""
    arguments = averaging_parser().parse_args(argv)
    # the inputs found first: the output's check creates its folder, which would otherwise make a
    # misspelt --save-dir (--output SAVE_DIR/average.pt) a folder holding no checkpoint
    paths = input_checkpoints(arguments)
    with output_file(arguments.output, "--output", "average.pt"):
        check_no_input_replaced(
            arguments.output, {"one of the checkpoints to average": paths}, "average"
        )
        write_whole(averaged_checkpoint(paths), arguments.output)
    print(
        f"averaged {len(paths)} checkpoint{'s' if len(paths) > 1 else ''} into "
        f"{arguments.output}: {', '.join(map(str, paths))}"
    )
    return paths


def cli_main() -> None:
    print_errors_as_one_line()  # bad input ends the command with one line, not a traceback
    main()
