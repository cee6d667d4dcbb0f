"""The README's commands as typed: its Python (hub interface) example runs on a tiny trained model,
its Train block trains each recipe with one command, and its Translate block's fairseq commands run
as written."""

import re
import shlex

import torch
from subword_nmt import learn_bpe

from ..support.demo_data import TEST_SENTENCES
from ..support.paths import REPO
from ..support.tools import run

MARKER = "<!-- tested by tests/repository/test_readme.py -->"
README = REPO / "README.md"


def readme_example() -> str:
    """The Python block right after MARKER in README.md."""
    after_marker = README.read_text(encoding="utf-8").split(MARKER, 1)[1]
    return re.match(r"\s*```python\n(.*?)```", after_marker, flags=re.S).group(1)


def readme_commands(section: str, program: str):
    """Each command of that program in the bash block of the README's section, as its words."""
    after_heading = README.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1]
    block = re.match(r"\s*```bash\n(.*?)```", after_heading, flags=re.S).group(1)
    commands = [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").split("\n")]
    return [words for words in commands if words and words[0] == program]


def as_typed_here(words, data_bin, checkpoint, bpe_codes=None):
    """The README's command on the tests' data and model, run from the repository root."""
    paths = {
        "prepared/data-bin": data_bin,
        "checkpoints/checkpoint_best.pt": checkpoint,
        "prepared/bpe.codes": bpe_codes,
    }
    return [paths.get(word, word) for word in words]


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


def test_the_readme_trains_the_cpu_recipe_and_the_papers_with_one_command_each():
    """tests/repository/test_configs.py trains each recipe of configs/ from the repository root."""
    trainings = readme_commands("Train", "fairseq-hydra-train")
    assert [words[words.index("--config-name") + 1] for words in trainings] == [
        "rnnsearch_cpu",
        "rnnsearch_50",
    ]
    for words in trainings:
        assert words[1:3] == ["--config-dir", "configs"]
        assert words[-1] == "task.data=prepared/data-bin"
        assert (REPO / "configs" / f"{words[4]}.yaml").is_file()


def test_the_readme_fairseq_generate_command_logs_its_progress_every_few_batches(
    checkpoints, data_bin
):
    (words,) = readme_commands("Translate", "fairseq-generate")
    interval = int(words[words.index("--log-interval") + 1])
    output = run(
        *as_typed_here(words, data_bin, checkpoints["rnnsearch_50"]),
        # batches of one sentence: the demo test set as long as a real one is in batches
        "--batch-size",
        "1",
        "--max-len-b",
        "20",
        cwd=REPO,
    )
    assert len(re.findall(r"^H-\d+\t", output, flags=re.M)) == TEST_SENTENCES
    logged = [int(batch) for batch in re.findall(rf"(\d+) / {TEST_SENTENCES} wps=", output)]
    assert logged == list(range(interval + 1, TEST_SENTENCES + 1, interval))


def test_the_readme_fairseq_generate_command_prints_and_scores_words_on_bpe_data(
    bpe_prepared, bpe_checkpoint
):
    (words,) = readme_commands("Translate", "fairseq-generate")
    output = run(
        *as_typed_here(words, bpe_prepared / "data-bin", bpe_checkpoint), "--max-len-b", "20"
    )
    references = (bpe_prepared / "tok" / "test.fr").read_text(encoding="utf-8").splitlines()
    targets = dict(re.findall(r"^T-(\d+)\t(.*)$", output, flags=re.M))
    assert [targets[str(sentence)] for sentence in range(len(references))] == references
    assert not re.search(r"^H-.*@@", output, flags=re.M)


def test_the_readme_fairseq_interactive_command_translates_each_line_an_empty_one_as_empty(
    checkpoints, data_bin, tmp_path
):
    codes = tmp_path / "bpe.codes"
    with open(data_bin.parent / "raw" / "train.en", encoding="utf-8") as text, open(
        codes, "w", encoding="utf-8"
    ) as out:
        learn_bpe.learn_bpe(text, out, 200)
    (words,) = readme_commands("Translate", "fairseq-interactive")
    output = run(
        *as_typed_here(words, data_bin, checkpoints["rnnsearch_50"], codes),
        "--max-len-b",
        "20",
        stdin="the dog sees a cat\n\n",
        cwd=REPO,
    )
    hypotheses = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", output, flags=re.M))
    assert sorted(hypotheses) == ["0", "1"] and hypotheses["1"] == ""
