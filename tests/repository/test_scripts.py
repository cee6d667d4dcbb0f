"""The shell recipes of scripts/ on bad input: a bad setting is refused in one line before anything
runs, a failed step ends the run with its error, Ctrl+C stops the trainings, paths are passed
whole, and the demo deletes nothing it did not write. Every tool a script calls (fairseq-train and
the others) is a stand-in here, first on PATH, so that nothing trains."""

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support.assertions import assert_one_line_error
from ..support.paths import REPO
from ..support.tools import ctrl_c_as_in_a_terminal, fairseq_env

SCRIPTS = REPO / "scripts"
EXPERIMENT = SCRIPTS / "run_multi30k_experiment.sh"
WORKFLOW = SCRIPTS / "run_multi30k_workflow.sh"
# the settings the scripts read from the environment, unset unless a test sets them
SETTINGS = ("BUDGET_MINUTES", "JOBS", "SYSTEMS", "PAPER_RECIPE", "DATA", "HEATMAPS", "SHORTLIST")
SETTINGS += ("DIM", "OPTIMIZER", "LR", "DROPOUT", "BATCH", "MULTI30K", "EVALUATE_OPTIONS")
DONE = 20  # seconds: every run here takes well under one

# What the stand-ins do: each records its arguments (NUL-separated) in NAME.calls/PID beside it.
RECORD = 'mkdir -p "$0.calls"; printf "%s\\0" "$@" > "$0.calls/$$"'
TRAINS = RECORD + (
    '\nwhile [ $# -gt 0 ]; do if [ "$1" = --save-dir ]; then'
    ' touch "$2/checkpoint_best.pt" "$2/checkpoint_last.pt"; fi; shift; done'
)
RESUME_ERROR = "error: cannot resume from checkpoint_last.pt: its model does not fit this run's"
FAILS = f'{RECORD}\necho "{RESUME_ERROR}" >&2\nexit 1'
RUNS_ON = f"{RECORD}\nexec sleep 60"  # a training of the whole budget; its PID stays the same


class Run:
    """A script run in folder with stand-ins for the tools it calls."""

    def __init__(self, script, folder, **stand_ins):
        self.script, self.folder, self.bin = script, folder, folder / "bin"
        self.bin.mkdir()
        for name, body in stand_ins.items():
            self.stand_in(name, body)

    def stand_in(self, name, body):
        path = self.bin / name
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        path.chmod(0o755)

    def env(self, settings):
        env = {key: value for key, value in fairseq_env().items() if key not in SETTINGS}
        env["PATH"] = f"{self.bin}{os.pathsep}{env['PATH']}"
        return {**env, **settings}

    def __call__(self, *arguments, cwd=None, **settings) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(self.script), *map(str, arguments)],
            env=self.env(settings),
            cwd=cwd or self.folder,
            capture_output=True,
            text=True,
            timeout=DONE,
        )

    def start(self, *arguments, **settings) -> subprocess.Popen:
        """In a process group of its own, SIGINT as in a terminal: killpg is Ctrl+C."""
        return subprocess.Popen(
            ["bash", str(self.script), *map(str, arguments)],
            env=self.env(settings),
            cwd=self.folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=ctrl_c_as_in_a_terminal,
        )

    def calls(self, name) -> dict:
        """PID -> the arguments of each call of the stand-in NAME."""
        folder = self.bin / f"{name}.calls"
        if not folder.exists():
            return {}
        return {int(p.name): p.read_text().split("\0")[:-1] for p in folder.iterdir()}


def running(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Driver:
    """run_multi30k_experiment.sh or run_multi30k_workflow.sh, set for a quick run into out."""

    run: Run
    out: Path
    settings: dict
    trainings: int  # how many it starts
    first_save_dir: str  # the --save-dir of the first, in out


# each driver, its settings for one training (the workflow always starts two), and its Driver
# fields after them
DRIVERS = {
    "experiment": (EXPERIMENT, {"SYSTEMS": "rnnsearch", "PAPER_RECIPE": "0"}, 1, "rnnsearch"),
    "workflow": (WORKFLOW, {}, 2, "seed1"),
}


@pytest.fixture(params=DRIVERS)
def driver(request, tmp_path):
    """A driver with every tool a stand-in, trainings that succeed at once; the experiment's data
    already prepared."""
    script, settings, trainings, first_save_dir = DRIVERS[request.param]
    data = tmp_path / "data"
    (data / "data-bin").mkdir(parents=True)
    (data / "data-bin" / "dict.en.txt").touch()
    tools = ("bahdanau-prepare-data", "bahdanau-average-checkpoints", "bahdanau-unk-dictionary")
    run = Run(script, tmp_path, **dict.fromkeys(tools, RECORD))
    run.stand_in("fairseq-train", TRAINS)
    run.stand_in("bahdanau-evaluate", RECORD)
    multi30k = tmp_path / "multi30k"  # the raw files' folder (the stand-in reads none)
    multi30k.mkdir()
    settings = {**settings, "DATA": str(data), "MULTI30K": str(multi30k)}
    yield Driver(run, tmp_path / "out", settings, trainings, first_save_dir)
    for pid in run.calls("fairseq-train"):  # whatever a failed test left running
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_failed_training_ends_the_run_with_its_error_and_nothing_is_evaluated(driver):
    earlier = driver.out / driver.first_save_dir / "checkpoint_best.pt"
    earlier.parent.mkdir(parents=True)
    earlier.touch()  # of an earlier run, which this one cannot resume
    driver.run.stand_in("fairseq-train", FAILS)
    completed = driver.run(driver.out, **driver.settings)
    assert completed.returncode == 1
    assert_one_line_error(completed.returncode, completed.stderr, "'s training failed (exit 1)")
    assert f"/train.log, which ends: {RESUME_ERROR}" in completed.stderr
    assert not driver.run.calls("bahdanau-evaluate")
    assert not driver.run.calls("bahdanau-average-checkpoints")


def test_a_failed_training_stops_the_others_at_once(driver):
    failing = "rnnencdec" if driver.run.script == EXPERIMENT else "--seed 2"
    driver.run.stand_in("fairseq-train", f'case "$*" in *"{failing} "*) {FAILS};; esac\n{RUNS_ON}')
    settings = {**driver.settings, "SYSTEMS": "rnnsearch rnnencdec", "JOBS": "2"}
    completed = driver.run(driver.out, **settings)  # within DONE, not the budget of the others
    assert completed.returncode == 1
    assert not any(running(pid) for pid in driver.run.calls("fairseq-train"))


def test_a_training_that_does_not_end_on_ctrl_c_is_stopped_all_the_same(driver):
    """One started just before the other failed can still ignore Ctrl+C, as a shell starts its
    background commands: it gets SIGTERM a few seconds later, rather than train on."""
    failing = "rnnencdec" if driver.run.script == EXPERIMENT else "--seed 2"
    ignores_ctrl_c = f"{RECORD}\ntrap '' INT\nexec sleep 60"
    driver.run.stand_in(
        "fairseq-train", f'case "$*" in *"{failing} "*) {FAILS};; esac\n{ignores_ctrl_c}'
    )
    settings = {**driver.settings, "SYSTEMS": "rnnsearch rnnencdec", "JOBS": "2"}
    completed = driver.run(driver.out, **settings)  # within DONE, not the budget of the other
    assert completed.returncode == 1
    assert not any(running(pid) for pid in driver.run.calls("fairseq-train"))


@pytest.mark.parametrize(
    "signal_number, to_the_group",
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["ctrl-c", "sigterm-to-the-script"],
)
def test_an_interruption_stops_the_trainings_and_says_how_to_resume(
    driver, signal_number, to_the_group
):
    driver.run.stand_in("fairseq-train", RUNS_ON)
    script = driver.run.start(driver.out, **driver.settings)
    deadline = time.monotonic() + DONE
    while len(driver.run.calls("fairseq-train")) < driver.trainings:
        assert time.monotonic() < deadline, "the trainings did not start"
        time.sleep(0.05)
    (os.killpg if to_the_group else os.kill)(script.pid, signal_number)
    _, stderr = script.communicate(timeout=DONE)
    assert script.returncode == 128 + signal_number
    assert stderr.endswith("interrupted: rerun the same command to resume\n")
    assert not any(running(pid) for pid in driver.run.calls("fairseq-train"))


def test_paths_with_spaces_and_pattern_characters_reach_the_tools_whole(driver):
    out = driver.out.with_name("out [1] *")
    if driver.run.script == EXPERIMENT:
        data = out.with_name("data *")
        os.rename(driver.settings["DATA"], data)
    else:
        data = out / "data"  # the workflow's own
    completed = driver.run(out, **{**driver.settings, "DATA": str(data)})
    assert completed.returncode == 0, completed.stderr
    for arguments in driver.run.calls("fairseq-train").values():
        assert arguments[0] == f"{data}/data-bin"
        assert arguments[arguments.index("--save-dir") + 1].startswith(f"{out}/")
    assert driver.run.calls("bahdanau-evaluate")


def test_paths_that_start_with_a_dash_are_folders_read_from_where_the_run_starts(driver):
    """realpath took OUT -out, DATA -data and MULTI30K -multi30k for its options: the run ended
    in "realpath: invalid option -- 'o'", and OUT --help in a refusal of realpath's help text."""
    folder = driver.run.folder
    os.rename(driver.settings["DATA"], folder / "-data")
    os.rename(driver.settings["MULTI30K"], folder / "-multi30k")
    settings = {**driver.settings, "DATA": "-data", "MULTI30K": "-multi30k"}
    completed = driver.run("-out", **settings)
    assert completed.returncode == 0, completed.stderr
    for arguments in driver.run.calls("fairseq-train").values():
        assert arguments[arguments.index("--save-dir") + 1].startswith(f"{folder}/-out/")
    assert (folder / "-out" / "commands.txt").exists()


@pytest.mark.parametrize("script", [SCRIPTS / "demo.sh", EXPERIMENT, WORKFLOW])
@pytest.mark.parametrize("option", ["-h", "--help"])
def test_help_prints_the_usage_and_runs_nothing(script, option, tmp_path):
    completed = Run(script, tmp_path)(option)
    assert completed.returncode == 0, completed.stderr
    assert f"Usage: bash scripts/{script.name}" in completed.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bin"]


BAD_SETTINGS = [
    ("experiment", "JOBS", "0", "JOBS=0 is not a number of trainings at once"),
    ("experiment", "JOBS", "-1", "JOBS=-1 is not a number of trainings at once"),
    ("experiment", "JOBS", "two", "JOBS=two is not a number of trainings at once"),
    ("experiment", "PAPER_RECIPE", "yes", "PAPER_RECIPE=yes: give 1"),
    ("experiment", "SYSTEMS", "rnnsearch rnnsearch", "SYSTEMS names rnnsearch twice"),
    ("experiment", "HEATMAPS", "1 x", "HEATMAPS names 'x'"),
    ("workflow", "MULTI30K", "/no/multi30k", "MULTI30K=/no/multi30k is not a folder"),
    *[
        (
            driver,
            "BUDGET_MINUTES",
            value,
            f"BUDGET_MINUTES={value} is not a number of minutes over 0",
        )
        for driver in DRIVERS
        for value in ("0", "-5", "30min")
    ],
]


@pytest.mark.parametrize("driver, setting, value, message", BAD_SETTINGS, indirect=["driver"])
def test_a_bad_setting_is_refused_in_one_line_before_anything_runs(driver, setting, value, message):
    completed = driver.run(driver.out, **{**driver.settings, setting: value})
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"error: {message}")
    assert completed.stderr.count("\n") == 1
    assert not driver.out.exists()
    assert not driver.run.calls("fairseq-train")


@pytest.mark.parametrize("driver", ["experiment"], indirect=True)
def test_the_experiment_refuses_a_data_bin_as_its_data(driver):
    """DATA is the folder bahdanau-prepare-data writes, with its data-bin/ inside: given the
    data-bin itself, the experiment prepared Multi30k anew inside it and trained on that, not on
    the data given, without a word."""
    data_bin = Path(driver.settings["DATA"]) / "data-bin"
    completed = driver.run(driver.out, **{**driver.settings, "DATA": str(data_bin)})
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: DATA {data_bin} is a data-bin folder: give the folder bahdanau-prepare-data "
        f"wrote it in, {data_bin.parent}\n"
    )
    assert not driver.out.exists()
    assert not driver.run.calls("bahdanau-prepare-data")
    assert not driver.run.calls("fairseq-train")


@pytest.mark.parametrize("driver", ["experiment"], indirect=True)
def test_the_experiment_refuses_a_multi30k_that_is_no_folder_before_preparing_from_it(driver):
    """Where DATA is still to be prepared, prepare-data's own line named its --from-dir, which the
    user of the script does not give: MULTI30K is named, before anything runs."""
    settings = {**driver.settings, "DATA": str(driver.out.parent / "fresh"), "MULTI30K": "/no/m30k"}
    completed = driver.run(driver.out, **settings)
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: MULTI30K=/no/m30k is not a folder: set MULTI30K")
    assert completed.stderr.count("\n") == 1
    assert not driver.out.exists()
    assert not driver.run.calls("bahdanau-prepare-data")


@pytest.mark.parametrize("driver", ["workflow"], indirect=True)
def test_a_relative_multi30k_is_read_from_where_the_run_starts(driver):
    """The scripts run their tools from the repository: a relative MULTI30K reached
    bahdanau-prepare-data as a path from there, not from the folder the user ran it in."""
    completed = driver.run(driver.out, **{**driver.settings, "MULTI30K": "multi30k"})
    assert completed.returncode == 0, completed.stderr
    (arguments,) = driver.run.calls("bahdanau-prepare-data").values()
    assert arguments[arguments.index("--from-dir") + 1] == str(driver.run.folder / "multi30k")


def with_a_test_set_of_three_sentences(driver) -> Path:
    """The experiment's DATA, its test set's source text beside the binaries as
    bahdanau-prepare-data writes it: sentences 0 to 2."""
    data = Path(driver.settings["DATA"])
    (data / "data-bin" / "test.en-fr.en.txt").write_text("a cat .\na dog .\na bird .\n")
    return data


@pytest.mark.parametrize("driver", ["experiment"], indirect=True)
def test_a_heatmap_past_the_test_set_is_refused_in_one_line_before_any_training(driver):
    """bahdanau-evaluate refused it only after the trainings (the default 357 with a test set of
    100 sentences), with the budget of every system spent."""
    data = with_a_test_set_of_three_sentences(driver)
    completed = driver.run(driver.out, **driver.settings, HEATMAPS="1 3")
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: HEATMAPS names 3, but the test set of {data} has sentences 0 to 2: give test "
        'sentence numbers within it, or HEATMAPS="" for none\n'
    )
    assert not driver.run.calls("fairseq-train")


@pytest.mark.parametrize("driver", ["experiment"], indirect=True)
def test_the_last_sentence_of_the_test_set_is_drawn(driver):
    with_a_test_set_of_three_sentences(driver)
    assert driver.run(driver.out, **driver.settings, HEATMAPS="0 2").returncode == 0
    [arguments] = driver.run.calls("bahdanau-evaluate").values()
    assert arguments[arguments.index("--heatmaps") :][:3] == ["--heatmaps", "0", "2"]


def trains_saving_epochs(epochs: int) -> str:
    """fairseq-train's stand-in, its --save-dir given end-of-epoch checkpoints 1 to epochs too."""
    saves = f'for e in $(seq {epochs}); do touch "$2/checkpoint$e.pt"; done; '
    return TRAINS.replace('touch "$2/', saves + 'touch "$2/')


def the_models_evaluated(driver) -> list:
    """The arguments of the workflow's first evaluation, the models' (seed1_last among them)."""
    [models] = [
        a for a in driver.run.calls("bahdanau-evaluate").values() if "--replace-unk" not in a
    ]
    return models


@pytest.mark.parametrize("epochs, averaged", [(7, 5), (2, 2)], ids=["seven", "two"])
@pytest.mark.parametrize("driver", ["workflow"], indirect=True)
def test_the_workflow_averages_the_last_five_end_of_epoch_checkpoints_or_as_many_as_it_saved(
    driver, epochs, averaged
):
    """Asked for 5 of fewer (a short BUDGET_MINUTES), bahdanau-average-checkpoints ended the run
    after the trainings, nothing evaluated; now fewer are averaged, after a warning."""
    driver.run.stand_in("fairseq-train", trains_saving_epochs(epochs))
    completed = driver.run(driver.out, **driver.settings)
    assert completed.returncode == 0, completed.stderr
    average = f"{driver.out}/seed1/average_last{averaged}.pt"
    assert list(driver.run.calls("bahdanau-average-checkpoints").values()) == [
        ["--inputs", f"{driver.out}/seed1", "--last-epochs", str(averaged), "--output", average]
    ]
    assert f"seed1_average_last{averaged}={average}" in the_models_evaluated(driver)
    assert ("warning: seed 1 saved 2 end-of-epoch checkpoints" in completed.stderr) == (
        averaged < 5
    )


@pytest.mark.parametrize("driver", ["workflow"], indirect=True)
def test_a_workflow_without_an_end_of_epoch_checkpoint_evaluates_the_rest_after_a_warning(driver):
    driver.run.stand_in("fairseq-train", trains_saving_epochs(0))
    completed = driver.run(driver.out, **driver.settings)
    assert completed.returncode == 0, completed.stderr
    assert "warning: seed 1 saved no end-of-epoch checkpoint" in completed.stderr
    assert not driver.run.calls("bahdanau-average-checkpoints")
    assert not any("average" in argument for argument in the_models_evaluated(driver))


@pytest.mark.parametrize("driver", ["experiment"], indirect=True)
def test_empty_heatmaps_draw_none(driver):
    assert driver.run(driver.out, **driver.settings, HEATMAPS="").returncode == 0
    [arguments] = driver.run.calls("bahdanau-evaluate").values()
    assert "--heatmaps" not in arguments


@pytest.mark.parametrize("driver", ["workflow"], indirect=True)
def test_the_workflow_lists_the_commands_of_its_last_run(driver):
    for _ in range(2):
        assert driver.run(driver.out, **driver.settings).returncode == 0
    commands = (driver.out / "commands.txt").read_text().splitlines()
    assert [command.split(" --seed ")[1][0] for command in commands] == ["1", "2"]


# The demo: its corpus made for real (half a second), fairseq's tools and the plugin's stand-ins
# that succeed, each printing what the demo shows of it.
DEMO = SCRIPTS / "demo.sh"
DEMO_TOOLS = {
    "fairseq-preprocess": RECORD,
    "fairseq-train": f"{RECORD}\necho 'epoch 001 | valid on valid subset | loss 1.0'",
    "fairseq-generate": f"{RECORD}\necho 'Generate test with beam=12: BLEU4 = 99.0'",
    "fairseq-interactive": f"{RECORD}\nprintf 'S-0\\tthe cat\\nH-0\\t-0.1\\tle chat\\n'",
    "bahdanau-plot-alignment": RECORD,
}


@pytest.fixture
def demo(tmp_path):
    return Run(DEMO, tmp_path, **DEMO_TOOLS)


def test_the_demo_refuses_a_folder_it_did_not_write(demo, tmp_path):
    folder = tmp_path / "project"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "checkpoint_best.pt").write_text("weeks of training")
    completed = demo(folder)
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: OUTPUT_DIR {folder} exists and was not written by the demo: give a new folder "
        "(the demo replaces its own outputs there)\n"
    )
    assert (folder / "checkpoints" / "checkpoint_best.pt").read_text() == "weeks of training"
    assert sorted(path.name for path in folder.iterdir()) == ["checkpoints"]


def test_the_demo_reruns_over_its_own_outputs(demo, tmp_path):
    for _ in range(2):
        completed = demo(tmp_path / "demo")
        assert completed.returncode == 0, completed.stderr
    assert len(demo.calls("fairseq-train")) == 2


def test_the_demo_reads_a_relative_output_dir_from_where_it_is_run(demo, tmp_path):
    name = f"demo-output-{os.getpid()}"
    in_the_repository = REPO / name
    assert not in_the_repository.exists()
    try:
        assert demo(name, cwd=tmp_path).returncode == 0
        assert (tmp_path / name / "raw" / "train.en").exists()
        assert not in_the_repository.exists()
    finally:
        subprocess.run(["rm", "-rf", str(in_the_repository)], check=True)


def test_the_demo_takes_an_output_dir_that_starts_with_a_dash_for_a_folder(demo, tmp_path):
    completed = demo("-demo", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "-demo" / "raw" / "train.en").exists()


def test_the_demo_refuses_a_comma_in_its_output_dir(demo, tmp_path):
    folder = tmp_path / "de,mo"
    completed = demo(folder)
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"error: OUTPUT_DIR {folder} has a comma")
    assert completed.stderr.count("\n") == 1
    assert not folder.exists()


# each step's tool, and its log
DEMO_LOGS = {
    "fairseq-preprocess": "preprocess.log",
    "fairseq-train": "train.log",
    "fairseq-generate": "generate.log",
    "fairseq-interactive": "interactive.log",
    "bahdanau-plot-alignment": "plot-alignment.log",
}


@pytest.mark.parametrize("tool", DEMO_LOGS)
def test_a_failed_demo_step_ends_the_demo_with_its_error(demo, tmp_path, tool):
    demo.stand_in(
        tool, f'{RECORD}\necho "a line of progress"\necho "error: {tool} went wrong" >&2\nexit 1'
    )
    completed = demo(tmp_path / "demo")
    assert completed.returncode == 1
    assert completed.stderr.splitlines()[-1] == (
        f"error: {tool} failed (exit 1): see demo/{DEMO_LOGS[tool]}, which ends: "
        f"error: {tool} went wrong"
    )


def test_the_paper_recipe_refuses_a_folder_that_is_not_a_data_bin(tmp_path):
    completed = subprocess.run(
        ["bash", str(SCRIPTS / "train_paper_recipe.sh"), "rnnsearch_50", str(tmp_path), "ckpt"],
        capture_output=True,
        text=True,
        timeout=DONE,
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: DATA {tmp_path} is not a data-bin folder (no dict.*.txt): give the data-bin "
        "folder bahdanau-prepare-data wrote\n"
    )


# Every bash script of the project, those the docs say to run with bash: sh (Debian's dash) stops
# at their first bash-only line with its own message, so each begins with the same guard line.
BASH_SCRIPTS = sorted(
    path
    for path in [*SCRIPTS.glob("*.sh"), *(REPO / "bench" / "gpu").glob("*.sh")]
    if path.read_text().startswith("#!/usr/bin/env bash\n")
)


@pytest.mark.parametrize("script", BASH_SCRIPTS, ids=lambda path: path.name)
def test_a_bash_script_run_with_sh_says_to_run_it_with_bash(script, tmp_path):
    relative = script.relative_to(REPO)
    completed = subprocess.run(
        ["sh", str(relative), str(tmp_path / "out")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=DONE,
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: {relative} is a bash script, which sh does not run: run it as bash {relative}\n"
    )
    assert list(tmp_path.iterdir()) == []
