"""Figure 3 of the paper: the soft alignment alpha_ij of one translation, as a grayscale heatmap."""

from pathlib import Path
from typing import List, Sequence

import torch

END_OF_SENTENCE = "<end>"


def load_translator(checkpoint: Path, data: Path, **generation_options):
    """fairseq's hub interface for a trained model (with --tokenizer/--bpe options if any)."""
    from fairseq.models import FairseqEncoderDecoderModel

    return FairseqEncoderDecoderModel.from_pretrained(
        str(checkpoint.parent),
        checkpoint_file=checkpoint.name,
        data_name_or_path=str(data),
        **generation_options,
    )


def translate_with_alignment(translator, sentence: str, beam: int = 5):
    """Returns (source tokens, target tokens, alpha: target x source), end-of-sentence included."""
    source_ids = translator.encode(sentence)
    hypothesis = translator.generate([source_ids], beam=beam)[0][0]
    alpha = hypothesis["attention"]  # source x target
    if alpha is None:
        raise ValueError("this model has no attention to plot (rnnencdec uses one fixed context)")
    source = [translator.src_dict[i] for i in source_ids[:-1].tolist()] + [END_OF_SENTENCE]
    target = [translator.tgt_dict[i] for i in hypothesis["tokens"][:-1].tolist()] + [END_OF_SENTENCE]
    return source, target, alpha.t().float().cpu()


def plot_alignment(source: Sequence[str], target: Sequence[str], alpha: torch.Tensor, path: Path) -> None:
    """Source words along the top, target words down the side; 0 is black and 1 is white."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 1.5 + 0.45 * len(source)
    height = 1.5 + 0.4 * len(target)
    figure, axes = plt.subplots(figsize=(width, height))
    image = axes.imshow(alpha.numpy(), cmap="gray", vmin=0.0, vmax=1.0, aspect="equal")
    axes.set_xticks(range(len(source)), labels=source, rotation=90)
    axes.set_yticks(range(len(target)), labels=target)
    axes.xaxis.tick_top()
    figure.colorbar(image, ax=axes, fraction=0.04, pad=0.02, label="alpha")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def alignment_heatmaps(checkpoint: Path, data: Path, sentences: List[str], out_dir: Path, **options):
    translator = load_translator(checkpoint, data, **options)
    translator.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, sentence in enumerate(sentences, start=1):
        source, target, alpha = translate_with_alignment(translator, sentence)
        path = out_dir / f"alignment_{number}.png"
        plot_alignment(source, target, alpha, path)
        paths.append((path, " ".join(target[:-1])))
    return paths
