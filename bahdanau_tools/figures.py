"""matplotlib for files only: the Agg backend, so plotting works without a display."""

from pathlib import Path

DPI = 120
LONGEST_SIDE = 16_000  # pixels: Agg refuses 2**16, and holds 4 bytes a pixel while it draws


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(figure, path: Path) -> None:
    """The figure at 120 dots an inch, fewer where that would pass LONGEST_SIDE pixels (a
    heatmap of a sentence of hundreds of words): the whole figure, smaller, rather than a
    failure or gigabytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    dpi = min(DPI, LONGEST_SIDE / max(figure.get_size_inches()))
    figure.savefig(path, dpi=dpi, format="png", bbox_inches="tight")  # long labels stay whole
    pyplot().close(figure)
