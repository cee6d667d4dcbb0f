"""A training run owns its --save-dir: a second run is refused while the first lives, a killed run's
hold is taken over in one line, checkpoint_last.pt is never left cut short, a full disk is one line
that keeps the checkpoints before it, and a --save-dir that cannot hold checkpoints is one line
before training starts."""

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import time
import zipfile

import pytest
import torch

from bahdanau_plugin.save_dir import HOLD, SaveDirError, hold, stored_size

from ..support.assertions import assert_one_line_error
from ..support.tools import fairseq_env, fairseq_tool, tool_on_bytes
from ..support.training import train_command

# Sizes at which a checkpoint (20 MB) takes long enough to write that a run can be killed meanwhile.
WRITING_FOR_A_WHILE = [
    *("--encoder-embed-dim", "128", "--decoder-embed-dim", "128", "--attention-dim", "128"),
    *("--encoder-hidden-dim", "256", "--decoder-hidden-dim", "256", "--maxout-dim", "128"),
    *("--batch-size", "8", "--save-interval-updates", "1", "--disable-validation"),
]
TRAINING_STARTED = "begin training on epoch"
STARTING = 180  # seconds a run may take to start (imports, data, model) on a busy machine


def _training(command, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [fairseq_tool("fairseq-train"), *map(str, command)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=fairseq_env(),
        **popen,
    )


def _sizes(folder) -> dict:
    sizes = {}
    for name in os.listdir(folder) if folder.exists() else []:
        with contextlib.suppress(FileNotFoundError):  # renamed or removed meanwhile
            sizes[name] = (folder / name).stat().st_size
    return sizes


def _being_written(sizes: dict) -> bool:
    """Whether checkpoint_last.pt (or the file that is to replace it) is being written, after
    two whole checkpoints: its size still under theirs."""
    whole = [size for name, size in sizes.items() if name.startswith("checkpoint_1_")]
    last = [size for name, size in sizes.items() if name.startswith("checkpoint_last.pt")]
    return len(whole) >= 2 and any(size < 0.9 * max(whole) for size in last)


@pytest.fixture(scope="module")
def killed_while_saving(data_bin, tmp_path_factory):
    """A training run killed with SIGKILL while checkpoint_last.pt was being written: its
    --save-dir, its command and its process id."""
    save_dir = tmp_path_factory.mktemp("killed") / "checkpoints"
    command = train_command(data_bin, save_dir, "rnnsearch_50", *WRITING_FOR_A_WHILE)
    process = _training([*command, "--max-update", "100"])
    try:
        while process.poll() is None and not _being_written(_sizes(save_dir)):
            time.sleep(0.001)  # a copy of 20 MB takes longer
        assert process.poll() is None, "the run ended before it was seen writing a checkpoint"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    return save_dir, command, process.pid


def test_checkpoint_last_pt_of_a_run_killed_while_writing_it_is_whole(killed_while_saving):
    save_dir, _, _ = killed_while_saving
    assert zipfile.is_zipfile(save_dir / "checkpoint_last.pt")
    assert "model" in torch.load(save_dir / "checkpoint_last.pt", weights_only=True)


def test_a_run_resumed_after_a_kill_takes_the_hold_over_in_one_line(killed_while_saving):
    save_dir, command, killed = killed_while_saving
    returncode, stdout, stderr = tool_on_bytes("fairseq-train", *command, "--max-update", "1")
    assert returncode == 0, stderr[-2000:]
    (warning,) = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert warning.startswith(f"warning: --save-dir {save_dir} was held by process {killed} ")
    assert warning.endswith("which ended without releasing it (killed?): this run takes it over")
    assert "Loaded checkpoint" in stdout + stderr
    assert not (save_dir / HOLD).exists()  # released as it ended


def test_a_second_run_into_a_save_dir_that_a_live_run_holds_is_refused_naming_the_holder(
    data_bin, tmp_path
):
    save_dir = tmp_path / "checkpoints"
    first = _training(train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "100000"))
    try:
        deadline = time.monotonic() + STARTING
        while first.poll() is None and not (save_dir / HOLD).exists():
            assert time.monotonic() < deadline, f"no {HOLD} after {STARTING} s"
            time.sleep(0.1)
        returncode, _, stderr = tool_on_bytes(
            "fairseq-train", *train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "1")
        )
        assert_one_line_error(
            returncode,
            stderr,
            f"--save-dir {save_dir} is in use by another training run, process {first.pid} on ",
            "fairseq-train",
            "another --save-dir",
        )
        assert first.poll() is None  # the first run goes on
    finally:
        first.kill()
        first.wait()


def _train_with_files_of_at_most(size: int, command) -> subprocess.CompletedProcess:
    """fairseq-train with ``command``, under a file size limit (RLIMIT_FSIZE) of ``size`` bytes."""

    def limit_file_sizes():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return subprocess.run(
        [fairseq_tool("fairseq-train"), *map(str, command)],
        capture_output=True,
        text=True,
        env=fairseq_env(),
        preexec_fn=limit_file_sizes,
        timeout=300,
    )


def _a_run_with_checkpoint_last(save_dir, checkpoint):
    save_dir.mkdir(exist_ok=True)
    shutil.copy(checkpoint, save_dir / "checkpoint_last.pt")


def test_a_write_that_fails_while_saving_is_one_line_and_the_checkpoints_before_stay_whole(
    data_bin, checkpoints, tmp_path
):
    """A file size limit (RLIMIT_FSIZE) fails the save's writes as a full disk does, with an
    OSError, here under the size of a checkpoint and over the parameters' room checked at start."""
    save_dir = tmp_path / "checkpoints"
    _a_run_with_checkpoint_last(save_dir, checkpoints["rnnsearch_50"])
    before = (save_dir / "checkpoint_last.pt").read_bytes()
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    limit = (len(before) + _stored_size(state["model"])) // 2
    command = train_command(
        data_bin, save_dir, "rnnsearch_50", "--max-update", "6", "--save-interval-updates", "5"
    )
    completed = _train_with_files_of_at_most(limit, command)
    assert_one_line_error(
        completed.returncode,
        completed.stderr,
        f"cannot save checkpoint {save_dir / 'checkpoint_1_5.pt'}: File too large",
        "the checkpoints saved before are kept whole",
    )
    assert os.listdir(save_dir) == ["checkpoint_last.pt"]
    assert (save_dir / "checkpoint_last.pt").read_bytes() == before


def _stored_size(model_state: dict) -> int:
    """What stored_size measures of a model, of its state as a checkpoint holds it."""
    return stored_size(_StateOnly(model_state))


class _StateOnly:
    def __init__(self, state):
        self._state = state

    def state_dict(self):
        return self._state


@contextlib.contextmanager
def _tmpfs(folder, *options):
    """A tmpfs mounted on folder for the block, where this process may mount one."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(folder)],
        capture_output=True,
    )
    if os.geteuid() != 0 or mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs root and CAP_SYS_ADMIN")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_disk_that_fills_while_copying_to_checkpoint_last_pt_keeps_it_whole(
    data_bin, checkpoints, tmp_path
):
    """The issue's reproduction: a tmpfs with room for a new checkpoint but not for its copy."""
    checkpoint = checkpoints["rnnsearch_50"]
    size = checkpoint.stat().st_size
    with _tmpfs(tmp_path / "disk", f"size={size * 5 // 2 // 4096 * 4096}") as disk:
        save_dir = disk / "checkpoints"
        _a_run_with_checkpoint_last(save_dir, checkpoint)
        command = train_command(
            data_bin,
            save_dir,
            "rnnsearch_50",
            *("--max-update", "6", "--save-interval-updates", "5", "--disable-validation"),
        )
        returncode, _, stderr = tool_on_bytes("fairseq-train", *command)
        assert_one_line_error(
            returncode,
            stderr,
            f"cannot save checkpoint {save_dir / 'checkpoint_last.pt'}: No space left on device",
        )
        assert sorted(os.listdir(save_dir)) == ["checkpoint_1_5.pt", "checkpoint_last.pt"]
        assert (save_dir / "checkpoint_last.pt").read_bytes() == checkpoint.read_bytes()
        assert zipfile.is_zipfile(save_dir / "checkpoint_1_5.pt")


def test_a_truncated_checkpoint_last_pt_names_the_newest_intact_checkpoint_to_put_in_its_place(
    data_bin, checkpoints, tmp_path
):
    save_dir = tmp_path / "checkpoints"
    save_dir.mkdir()
    whole = checkpoints["rnnsearch_50"].read_bytes()
    for age, name in enumerate(["checkpoint_1_4.pt", "checkpoint_best.pt", "checkpoint_1_2.pt"]):
        (save_dir / name).write_bytes(whole)
        os.utime(save_dir / name, (time.time() - 60 * (age + 1),) * 2)
    (save_dir / "checkpoint_last.pt").write_bytes(whole[: len(whole) // 2])
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train", *train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "8")
    )
    newest = save_dir / "checkpoint_1_4.pt"
    assert_one_line_error(
        returncode,
        stderr,
        f"cannot resume from {save_dir / 'checkpoint_last.pt'}: the file is incomplete",
        f"the newest intact checkpoint beside it is {newest}",
        f"cp {newest} {save_dir / 'checkpoint_last.pt'}), then run the same command",
    )
    assert "--restore-file" not in stderr  # fairseq would go back to it at every rerun


@pytest.mark.parametrize("restore_file", ["checkpoint_bset.pt", ""], ids=["missing", "folder"])
def test_a_restore_file_that_is_not_a_checkpoint_file_is_one_line_and_nothing_is_written(
    data_bin, checkpoints, tmp_path, restore_file
):
    """fairseq would log that it found no checkpoint, train from scratch and save over the
    --save-dir's checkpoints."""
    save_dir = tmp_path / "checkpoints"
    save_dir.mkdir()
    shutil.copy(checkpoints["rnnsearch_50"], save_dir / "checkpoint_last.pt")
    saved = (save_dir / "checkpoint_last.pt").read_bytes()
    command = train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "8")
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train", *command, "--restore-file", save_dir / restore_file
    )
    what = "is a folder" if restore_file == "" else "not found"
    assert_one_line_error(
        returncode, stderr, f"--restore-file {save_dir / restore_file} {what}", "checkpoint file"
    )
    assert sorted(os.listdir(save_dir)) == ["checkpoint_last.pt"]
    assert (save_dir / "checkpoint_last.pt").read_bytes() == saved


def test_a_continue_once_that_is_not_a_checkpoint_file_is_one_line_and_nothing_is_written(
    data_bin, checkpoints, tmp_path
):
    """fairseq would log that it found no checkpoint and train from scratch, a start that every
    later launch resumes: the training meant to be continued never is."""
    save_dir, misspelt = tmp_path / "checkpoints", tmp_path / "checkpoint_lats.pt"
    shutil.copy(checkpoints["rnnsearch_50"], tmp_path / "checkpoint_last.pt")  # the one meant
    command = train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "8")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--continue-once", misspelt)
    assert_one_line_error(returncode, stderr, f"--continue-once {misspelt} not found")
    assert not save_dir.exists() or os.listdir(save_dir) == []


def _contents(folder) -> dict:
    return {name: (folder / name).read_bytes() for name in os.listdir(folder)}


def _two_epochs_with_their_checkpoints(data_bin, save_dir, *options):
    """The tests' training command with epoch checkpoints, and options, run for 2 epochs into
    save_dir: (the command, save_dir's files and their contents after it)."""
    command = [
        flag
        for flag in train_command(data_bin, save_dir, "rnnsearch_50", *options)
        if flag != "--no-epoch-checkpoints"
    ]
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--max-epoch", "2")
    assert returncode == 0, stderr[-2000:]
    return command, _contents(save_dir)


def test_a_restore_file_of_a_point_before_the_save_dir_s_checkpoints_is_one_line_keeping_them(
    data_bin, tmp_path
):
    """fairseq would write the run's checkpoints over those of the training past it, and
    --keep-interval-updates (--keep-last-epochs) delete its new ones, ranked under them."""
    save_dir = tmp_path / "checkpoints"
    command = train_command(data_bin, save_dir, "rnnsearch_50", "--save-interval-updates", "2")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--max-update", "6")
    assert returncode == 0, stderr[-2000:]
    before = _contents(save_dir)
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *command,
        *("--max-update", "8", "--keep-interval-updates", "1", "--lr", "0.5"),
        *("--restore-file", save_dir / "checkpoint_1_2.pt"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--save-dir {save_dir} holds checkpoints saved past the point this run starts from "
        "(epoch 1, 2 updates): checkpoint_1_4.pt, checkpoint_1_6.pt, which it would overwrite",
        "move them aside, or give this run another --save-dir",
    )
    assert _contents(save_dir) == before


def test_reset_dataloader_into_a_save_dir_of_epoch_checkpoints_is_one_line_keeping_them(
    data_bin, tmp_path
):
    """--reset-dataloader starts the epochs again from 1 (the updates go on): fairseq wrote the
    run's checkpoint1.pt over the first epoch's, and --keep-last-epochs would delete it, ranked
    under checkpoint2.pt."""
    save_dir = tmp_path / "checkpoints"
    command, before = _two_epochs_with_their_checkpoints(data_bin, save_dir, "--disable-validation")
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train", *command, "--max-epoch", "3", "--reset-dataloader"
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--save-dir {save_dir} holds checkpoints saved past the point this run starts from "
        "(epoch 1, ",
        "updates: --reset-dataloader starts the epochs again from 1, at every launch): "
        "checkpoint1.pt, checkpoint2.pt, which it would overwrite",
    )
    assert _contents(save_dir) == before


def test_a_run_without_checkpoint_last_pt_beside_epoch_checkpoints_is_one_line_keeping_them(
    data_bin, tmp_path
):
    """Run again after --no-last-checkpoints, fairseq found no checkpoint_last.pt to resume and
    trained from scratch, writing its checkpoint1.pt over the first run's without a word."""
    save_dir = tmp_path / "checkpoints"
    command, before = _two_epochs_with_their_checkpoints(
        data_bin, save_dir, "--no-last-checkpoints"
    )
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--max-epoch", "3")
    assert_one_line_error(
        returncode,
        stderr,
        f"--save-dir {save_dir} holds checkpoints saved past the point this run starts from "
        "(epoch 1, 0 updates: from scratch, as there is no checkpoint_last.pt to resume",
        "give it as --restore-file): checkpoint_best.pt, checkpoint1.pt, checkpoint2.pt, which "
        "it would overwrite",
    )
    assert _contents(save_dir) == before


def test_a_run_from_scratch_into_a_save_dir_holding_checkpoint_best_pt_alone_keeps_it(
    data_bin, tmp_path
):
    """--no-epoch-checkpoints --no-last-checkpoints keep checkpoint_best.pt alone: run again,
    fairseq trained from scratch, no best score known, and its first validation wrote over it."""
    save_dir = tmp_path / "checkpoints"
    command = train_command(data_bin, save_dir, "rnnsearch_50", "--no-last-checkpoints")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--max-epoch", "1")
    assert returncode == 0, stderr[-2000:]
    before = _contents(save_dir)
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--max-epoch", "1")
    assert_one_line_error(
        returncode, stderr, "(epoch 1, 0 updates: from scratch", "checkpoint_best.pt, which"
    )
    assert _contents(save_dir) == before


def test_a_second_training_in_one_process_into_a_save_dir_it_holds_is_refused(tmp_path):
    """hydra's multirun runs its jobs in one process: a second job would resume the first's
    checkpoints as its own and overwrite them."""
    hold(str(tmp_path))
    with pytest.raises(SaveDirError, match="an earlier training in this process"):
        hold(str(tmp_path))


def test_a_save_dir_that_is_a_file_is_one_line_before_training(data_bin, tmp_path):
    (tmp_path / "checkpoints").write_text("not a folder\n")
    returncode, stdout, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(data_bin, tmp_path / "checkpoints", "rnnsearch_50", "--max-update", "1"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"cannot write checkpoints into --save-dir {tmp_path / 'checkpoints'}: it is a file",
    )
    assert TRAINING_STARTED not in stdout + stderr


@contextlib.contextmanager
def _read_only_folder(folder):
    """A folder this process cannot write into: a read-only tmpfs for root (whom permissions do
    not stop), else a folder without write permission."""
    if os.geteuid() == 0:
        with _tmpfs(folder, "ro", "size=64k"):
            yield "its file system is read-only"
        return
    folder.mkdir()
    folder.chmod(0o555)
    try:
        yield "it is read-only for this user"
    finally:
        folder.chmod(0o755)


def test_a_read_only_save_dir_is_one_line_before_training(data_bin, tmp_path):
    save_dir = tmp_path / "read-only"
    with _read_only_folder(save_dir) as cause:
        returncode, stdout, stderr = tool_on_bytes(
            "fairseq-train", *train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "1")
        )
    assert_one_line_error(
        returncode, stderr, f"cannot write checkpoints into --save-dir {save_dir}: {cause}"
    )
    assert TRAINING_STARTED not in stdout + stderr


def test_a_save_dir_without_room_for_a_checkpoint_is_one_line_before_training(data_bin, tmp_path):
    """No room for the parameters a checkpoint stores: a file size limit of 4 KiB, where writes
    fail as on a full disk (with an OSError)."""
    save_dir = tmp_path / "checkpoints"
    command = train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "1")
    completed = _train_with_files_of_at_most(4096, command)
    assert_one_line_error(
        completed.returncode,
        completed.stderr,
        f"--save-dir {save_dir} has no room for a checkpoint of this model",
        "File too large",
    )
    assert TRAINING_STARTED not in completed.stdout + completed.stderr
    assert os.listdir(save_dir) == []
