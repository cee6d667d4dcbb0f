"""matplotlib for files only: the Agg backend, so plotting works without a display."""

from pathlib import Path


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, format="png", bbox_inches="tight")  # long labels stay whole
    pyplot().close(figure)
