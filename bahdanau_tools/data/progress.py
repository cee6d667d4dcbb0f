"""Progress bars for the long stages, on stderr: tqdm's, which fairseq itself depends on."""

import sys
from typing import Optional

from tqdm import tqdm

# A few updates a second at most, so that a log file does not fill with them.
REFRESH_S = 1.0


def progress_bar(description: str, total: Optional[int], unit: str, **options) -> tqdm:
    """Counts and rate, and with a total the share done and the time left (ETA)."""
    return tqdm(
        desc=description,
        total=total,
        unit=unit,
        file=sys.stderr,
        mininterval=REFRESH_S,
        dynamic_ncols=True,
        **options,
    )


def byte_progress_bar(description: str, total: Optional[int], initial: int) -> tqdm:
    """Bytes in KiB, MiB, GiB, starting from those already there (a resumed download)."""
    return progress_bar(
        description, total, "B", unit_scale=True, unit_divisor=1024, initial=initial
    )
