"""The tooling beside the plugin, behind the console commands (bahdanau-*): everything a training
job does not need.

data            raw parallel text to fairseq binaries (bahdanau-prepare-data)
evaluation      BLEU as the paper reports it, on All and No UNK sentences and by length
                (bahdanau-evaluate)
averaging       one checkpoint averaging several (bahdanau-average-checkpoints)
unk_dictionary  the --replace-unk dictionary from a model's attention (bahdanau-unk-dictionary)
hub             a trained model (or an ensemble) behind the plugin's hub interface
alignment       the soft alignment alpha_ij of a translation, from fairseq's hypotheses
words           BPE pieces merged into words and Moses escapes undone, for people
heatmaps        a soft alignment drawn as the paper's Figure 3
plot_alignment  bahdanau-plot-alignment: heatmaps of sentences a model translates
figures         matplotlib without a display, PNG output
serving         bahdanau-serve: a checkpoint behind a browser page with live alignments and a JSON
                API (no figures: the page draws them)
user_dir        --user-dir, for the tools that load a model of one's own
errors          DataError, EvaluationError, AveragingError and UserDirError, the one-line errors
                for bad input
commands        the console commands' entry points: each imports its tool once it runs

The tools import the plugin (bahdanau_plugin), never the reverse: `--user-dir bahdanau_plugin`
loads the models alone, not the data pipeline, sacrebleu or matplotlib.
"""
