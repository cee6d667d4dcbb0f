"""The README's Python (hub interface) example runs as written, on a tiny trained model."""

import re

import torch

from .support.paths import REPO

MARKER = "<!-- tested by tests/test_readme.py -->"


def readme_example() -> str:
    """The Python block right after MARKER in README.md."""
    after_marker = (REPO / "README.md").read_text(encoding="utf-8").split(MARKER, 1)[1]
    return re.match(r"\s*```python\n(.*?)```", after_marker, flags=re.S).group(1)


def test_the_readme_hub_example_translates_and_gives_a_soft_alignment_per_target_token(
    checkpoints, data_bin
):
    checkpoint = checkpoints["rnnsearch_50"]
    code = (
        readme_example()
        .replace('"checkpoints"', repr(str(checkpoint.parent)))
        .replace('"checkpoint_best.pt"', repr(checkpoint.name))
        .replace('"prepared/data-bin"', repr(str(data_bin)))
    )
    example = {}
    exec(code, example)
    alpha, best, source = example["alpha"], example["best"], example["source"]
    assert alpha.shape == (len(best["tokens"]), len(source))
    torch.testing.assert_close(alpha.sum(dim=1), torch.ones(alpha.size(0)))
