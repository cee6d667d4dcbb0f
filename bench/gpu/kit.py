"""What every section of the GPU kit shares: where it runs, at which sizes, and how it starts
fairseq's tools."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

from ..common import REPO


@dataclass
class Kit:
    """device: "cuda", or "cpu" for a dry run at tiny sizes; work: scratch folder."""

    device: str
    work: Path

    @property
    def dry_run(self) -> bool:
        return self.device == "cpu"

    def env(self, tf32: bool = True) -> Dict[str, str]:
        """The environment of the tools the kit starts. NVIDIA_TF32_OVERRIDE=0 turns TF32 off in
        cuBLAS and cuDNN alike (torch enables it by default for cuDNN's RNNs only)."""
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        if not tf32:
            env["NVIDIA_TF32_OVERRIDE"] = "0"
        return env

    def device_flags(self) -> List[str]:
        """What fairseq's tools need on this device: --cpu in a dry run."""
        return ["--cpu"] if self.dry_run else []

    def fairseq(self, tool: str, *args, tf32: bool = True, timeout: int = 600) -> str:
        """Run fairseq-TOOL (train, generate, preprocess) as a module of this Python; its output."""
        return self.python("-m", f"fairseq_cli.{tool}", *args, tf32=tf32, timeout=timeout)

    def binarize(self, root: Path, *options) -> Path:
        """fairseq-preprocess of root/raw/{train,valid,test}.{en,fr} into root/data-bin."""
        splits = [f"--{split}pref={root / 'raw' / split}" for split in ("train", "valid", "test")]
        self.fairseq("preprocess", "--source-lang", "en", "--target-lang", "fr", *splits,
                     "--destdir", root / "data-bin", *options)  # fmt: skip
        return root / "data-bin"

    def python(self, *args, tf32: bool = True, timeout: int = 600) -> str:
        """Run this Python from the repository root; stdout and stderr together, or an error that
        carries the end of them."""
        command = [sys.executable, *map(str, args)]
        completed = subprocess.run(
            command, cwd=REPO, env=self.env(tf32), capture_output=True, text=True, timeout=timeout
        )
        output = completed.stdout + completed.stderr
        if completed.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command[1:4])} ... failed ({completed.returncode}):\n{output[-3000:]}"
            )
        return output


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
