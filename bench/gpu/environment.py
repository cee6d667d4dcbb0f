"""The machine line of a GPU kit run: GPU, driver, torch, CUDA, cuDNN, Python."""

import platform
import subprocess
from datetime import date

import torch


def describe(device: str) -> dict:
    description = {
        "date": date.today().isoformat(),
        "device": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    if device == "cuda":
        description.update(
            gpu=torch.cuda.get_device_name(),
            gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1),
            cuda=torch.version.cuda,
            cudnn=torch.backends.cudnn.version(),
            driver=_driver(),
        )
    else:
        description["cpu"] = platform.processor() or platform.machine()
    return description


def _driver() -> str:
    try:
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        return subprocess.run(query, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def line(description: dict) -> str:
    if description["device"] == "cuda":
        return (
            f"{description['gpu']} ({description['gpu_memory_gib']} GiB), driver "
            f"{description['driver']}, CUDA {description['cuda']}, cuDNN {description['cudnn']}, "
            f"torch {description['torch']}, Python {description['python']}"
        )
    return (
        f"dry run on the CPU ({description['cpu']}), torch {description['torch']}, "
        f"Python {description['python']}: not GPU numbers"
    )
