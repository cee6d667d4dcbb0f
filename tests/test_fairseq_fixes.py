import numpy as np
from fairseq.data import data_utils

import bahdanau_plugin  # noqa: F401


def test_batching_keeps_the_last_partial_batch():
    indices = np.arange(13, dtype=np.int64)
    batches = data_utils.batch_by_size(indices, num_tokens_fn=lambda i: 5, num_tokens_vec=np.full(13, 5),
                                       max_sentences=5, required_batch_size_multiple=4)
    assert np.concatenate(batches).tolist() == list(range(13))
