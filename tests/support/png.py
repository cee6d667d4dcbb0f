"""What the figure tests check of a written file: that it is a PNG image that reads back."""

from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes().startswith(PNG_SIGNATURE), f"{path} is not a PNG file"
    height, width = imread(path).shape[:2]
    assert height > 50 and width > 50
