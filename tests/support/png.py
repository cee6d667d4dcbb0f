"""What the figure tests check of a written file: that it is a PNG image that reads back."""

import struct
from pathlib import Path
from typing import Tuple

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes().startswith(PNG_SIGNATURE), f"{path} is not a PNG file"
    height, width = imread(path).shape[:2]
    assert height > 50 and width > 50


def png_size(path: Path) -> Tuple[int, int]:
    """Width and height in pixels, from the PNG's header alone."""
    return struct.unpack(">II", path.read_bytes()[16:24])
