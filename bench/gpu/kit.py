"""What every section of the GPU kit shares: where it runs, at which sizes, and how it starts
fairseq's tools and its own measurements, one after another or side by side."""

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

from ..paths import REPO

# A process's TF32 setting, fixed when CUDA starts in it: off (NVIDIA_TF32_OVERRIDE=0, in cuBLAS
# and cuDNN alike); in cuDNN only, torch's default (cuDNN's RNNs, the encoder's GRUs, in TF32, and
# matrix products in full float32); on (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, read by torch's
# ATen/Context.h: matrix products in TF32 too).
TF32 = {
    "off": {"NVIDIA_TF32_OVERRIDE": "0"},
    "cuDNN only": {},
    "on": {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"},
}


@dataclass
class Kit:
    """device: "cuda", or "cpu" for a dry run at tiny sizes; work: scratch folder."""

    device: str
    work: Path

    @property
    def dry_run(self) -> bool:
        return self.device == "cpu"

    def env(self, tf32: str = "cuDNN only", side_by_side: int = 1) -> Dict[str, str]:
        """The environment of a process the kit starts, in a TF32 setting of TF32, one of
        ``side_by_side`` processes that run at once. Those share the CPU's cores between their
        OpenMP threads, which spin while they wait, so that more threads than cores slow each
        process many times over (docs/gpu-kit.md). OMP_NUM_THREADS, if set, wins."""
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            **TF32[tf32],
        }
        if side_by_side > 1 and "OMP_NUM_THREADS" not in os.environ:
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // side_by_side))
        return env

    def device_flags(self) -> List[str]:
        """What fairseq's tools need on this device: --cpu in a dry run."""
        return ["--cpu"] if self.dry_run else []

    def start(self, *args, tf32: str = "cuDNN only", side_by_side: int = 1) -> "Started":
        """Start this Python from the repository root (``env``), its output going to a file of
        the work folder, so that processes started side by side never wait on a full pipe."""
        command = [sys.executable, *map(str, args)]
        descriptor, log = tempfile.mkstemp(prefix="output-", suffix=".log", dir=self.work)
        env = self.env(tf32, side_by_side)
        with os.fdopen(descriptor, "w") as output:
            process = subprocess.Popen(
                command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT
            )
        return Started(process, command, Path(log))

    def python(self, *args, tf32: str = "cuDNN only", timeout: int = 600) -> str:
        """Run this Python from the repository root; its output, or an error that carries the end
        of it."""
        return self.start(*args, tf32=tf32).output(timeout)

    def fairseq(self, tool: str, *args, tf32: str = "cuDNN only", timeout: int = 600) -> str:
        """Run fairseq-TOOL (train, generate, preprocess) as a module of this Python; its output."""
        return self.python("-m", f"fairseq_cli.{tool}", *args, tf32=tf32, timeout=timeout)

    def binarize(self, root: Path, *options) -> Path:
        """fairseq-preprocess of root/raw/{train,valid,test}.{en,fr} into root/data-bin."""
        splits = [f"--{split}pref={root / 'raw' / split}" for split in ("train", "valid", "test")]
        self.fairseq("preprocess", "--source-lang", "en", "--target-lang", "fr", *splits,
                     "--destdir", root / "data-bin", *options)  # fmt: skip
        return root / "data-bin"


@dataclass
class Started:
    """A process the kit started (Kit.start), and the file its output goes to."""

    process: subprocess.Popen
    command: List[str]
    log: Path

    def output(self, timeout: int = 600) -> str:
        """Its output once it ends, or an error that carries the end of it."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        output = self.log.read_text(errors="replace")
        if self.process.returncode != 0:
            raise RuntimeError(
                f"{' '.join(self.command[1:4])} ... failed ({self.process.returncode}):\n"
                f"{output[-3000:]}"
            )
        return output


def outputs(started: List[Started], timeout: int = 600) -> List[str]:
    """The outputs of processes started side by side, once every one has ended; the first one's
    error if any failed."""
    ended = []
    for each in started:
        try:
            ended.append(each.output(timeout))
        except RuntimeError as error:
            ended.append(error)
    for output in ended:
        if isinstance(output, RuntimeError):
            raise output
    return ended


# The line on which a measurement run in a process of its own prints its result, as JSON.
RESULT = "bench.gpu result:"


def print_result(result) -> None:
    print(RESULT, json.dumps(result), flush=True)


def result_of(output: str):
    """The result printed by print_result in a process's output."""
    lines = [line for line in output.splitlines() if line.startswith(RESULT)]
    if not lines:
        raise RuntimeError(f"no result in the output:\n{output[-3000:]}")
    return json.loads(lines[-1][len(RESULT) :])
