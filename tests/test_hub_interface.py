"""The models' from_pretrained returns fairseq's hub interface, subclassed so that replace_unk=
translates through --task translation_with_source_words (bahdanau_plugin/hub_interface.py)."""

import pytest
from fairseq.hub_utils import GeneratorHubInterface
from fairseq.tasks.translation import TranslationTask

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models import RNNencdecModel, RNNsearchModel
from bahdanau_plugin.tasks import TranslationWithSourceWordsTask


def load(model_class, checkpoint, data_bin, **options):
    return model_class.from_pretrained(
        str(checkpoint.parent),
        checkpoint_file=checkpoint.name,
        data_name_or_path=str(data_bin),
        **options,
    )


def test_without_replace_unk_the_hub_is_fairseqs_with_its_translation_task(checkpoints, data_bin):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    assert isinstance(hub, GeneratorHubInterface)
    assert type(hub.task) is TranslationTask


def test_with_replace_unk_the_hub_translates_through_the_plugins_task(checkpoints, data_bin):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk="")
    assert isinstance(hub.task, TranslationWithSourceWordsTask) and hub.task.replaces_unknown_words
    assert hub.cfg.generation.replace_unk is None  # not fairseq's own replacement as well


def test_an_rnnencdec_hub_with_replace_unk_is_refused_when_loaded(checkpoints, data_bin):
    with pytest.raises(ConfigurationError, match="rnnencdec has no attention"):
        load(RNNencdecModel, checkpoints["rnnencdec_50"], data_bin, replace_unk="")
