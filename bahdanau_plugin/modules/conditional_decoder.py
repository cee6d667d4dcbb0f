"""The decoder of Appendix A.2.2, RNNsearch's with the alignment model and RNNencdec's without.

At target position i it takes the previous state s_{i-1} and word y_{i-1}, obtains a context c_i
(from the alignment model in RNNsearch, the encoder's one fixed c in RNNencdec), predicts y_i
through the deep maxout output from (s_{i-1}, y_{i-1}, c_i), and moves to
s_i = f(s_{i-1}, y_{i-1}, c_i).

Read from ``features``: its recipe numbers the steps, ``recur`` is step 2 at every position,
``step`` one position of it, ``context`` its step 2a. The two models differ in one branch each,
where c_i is obtained (``context``) and what is computed once per batch (``initial_cache``), as
fairseq's ``LSTMDecoder`` with and without attention.
"""

from typing import Dict, Optional, Tuple

import torch
from fairseq.models import FairseqIncrementalDecoder
from fairseq.modules import FairseqDropout
from torch import Tensor, nn

from .. import speed
from . import unused_weights
from .attention import BahdanauAttention
from .beam_rows import CHECKED, SENTENCES, reorder_rows
from .conditional_gru import ConditionalGRUCell
from .initialization import build_embedding, normal_, zero_
from .maxout_output import MaxoutOutput


class ConditionalGRUDecoder(FairseqIncrementalDecoder):
    """With ``attention`` (RNNsearch), c_i = sum_j alpha_ij h_j over the annotations (Eqs. 5 and
    6), and s_0 is computed from <-h_1; without (RNNencdec), c_i is the encoder's summary
    c = tanh(V h_T) at every position, and s_0 is computed from c."""

    def __init__(self, cfg, dictionary, attention: bool):
        super().__init__(dictionary)
        if attention:
            context_dim = 2 * cfg.encoder_hidden_dim  # c_i, a weighted sum of h_j
            summary_dim = cfg.encoder_hidden_dim  # <-h_1
        else:
            context_dim = summary_dim = cfg.decoder_hidden_dim  # c
        self.dropout_module = FairseqDropout(cfg.dropout, module_name=self.__class__.__name__)
        self.embed_tokens = build_embedding(
            len(dictionary), cfg.decoder_embed_dim, dictionary.pad()
        )
        self.initial_state = nn.Linear(summary_dim, cfg.decoder_hidden_dim)  # W_s
        self.gru = ConditionalGRUCell(cfg.decoder_embed_dim, context_dim, cfg.decoder_hidden_dim)
        self.deep_output = MaxoutOutput(
            cfg.decoder_hidden_dim, cfg.decoder_embed_dim, context_dim, cfg.maxout_dim
        )
        self.output_projection = nn.Linear(cfg.maxout_dim, len(dictionary))  # W_o
        for layer in (self.initial_state, self.output_projection):
            normal_(layer.weight)
            zero_(layer.bias)
        # Built last, as ever: the parameters keep their order (optimizer states in checkpoints)
        # and their initial values under a seed.
        self.attention = (
            BahdanauAttention(cfg.decoder_hidden_dim, context_dim, cfg.attention_dim)
            if attention
            else None
        )
        self.generation_only = False  # make_generation_fast_

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model that will only translate (fairseq-generate,
        fairseq-interactive, the hub): its searches compile with the weights as constants."""
        self.generation_only = True

    @property
    def per_sentence(self) -> Tuple[str, ...]:
        """The cache's tensors computed from h_j (B x S x ...): in a beam search, one row per
        sentence for all of its beams (beam_rows), read with broadcasting."""
        return ("annotations", "projected_annotations") if self.attention is not None else ()

    def forward(self, prev_output_tokens, encoder_out, incremental_state=None, **kwargs):
        """W_o t_i at every target position, and alpha_i. A search's step (one position at a
        time, ``next_words``) is compiled whole, with the weights as constants where the model
        only translates (on a CPU once it has run a while eagerly: a short decoding would not win
        compiling back); training compiles ``step`` alone, inside ``recur``'s loop (speed/)."""
        if incremental_state is not None:
            cache = self._cache(encoder_out, incremental_state)
            next_words = speed.compiled(
                self.next_words, constant_weights=self.generation_only, eager_first_on_cpu=True
            )
            # y_{i-1} (B x 1), a tensor of its own: its offset in the target so far (its step)
            # would key the compiled step (torch specializes offsets 0 and 1)
            previous = prev_output_tokens[:, -1:].clone()
            logits, alphas, cache["state"] = next_words(previous, encoder_out, cache)
            self.set_incremental_state(incremental_state, "cache", cache)
            return logits, {"attn": [alphas]}
        features, extra = self.extract_features(prev_output_tokens, encoder_out)
        logits = unused_weights.in_the_output(
            self.output_layer(features),
            self.gru.parameters(),
            target_positions=prev_output_tokens.size(1),
        )  # for fairseq's default DDP backend (unused_weights.py)
        return logits, extra

    def next_words(self, prev_output_token, encoder_out, cache):
        """A search's step, from y_{i-1} (B x 1) and the cache at s_{i-1}: W_o t_i (B x 1 x V),
        alpha_i (B x 1 x S, or None) and s_i."""
        features, alphas, state = self.features(prev_output_token, encoder_out, cache)
        return self.output_layer(features), alphas, state

    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **kwargs):
        """t_i at every target position (``features``) and alpha_i; with fairseq's incremental
        state, for the last position, from the state that the state holds."""
        cache = self._cache(encoder_out, incremental_state)
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
        features, alphas, state = self.features(prev_output_tokens, encoder_out, cache)
        if incremental_state is not None:
            cache["state"] = state
            self.set_incremental_state(incremental_state, "cache", cache)
        return features, {"attn": [alphas]}

    def features(
        self, prev_output_tokens: Tensor, encoder_out: Dict[str, Tensor], cache: Dict[str, Tensor]
    ) -> Tuple[Tensor, Optional[Tensor], Tensor]:
        """The decoder over target positions i = 1..T (Appendix A.2.2), given y_0..y_{T-1}
        (B x T), the encoder's output (annotations h_j: B x S x 2n for RNNsearch) and what is
        computed once per batch, s_0 among it (``initial_cache``):

        1. E y_{i-1}, and the GRU's input term W E y_{i-1} for every position at once;
        2. at each position, from the previous state s_{i-1} (``recur``, ``step``):
           a. the context c_i (``context``): RNNsearch's alignment model, e_ij = a(s_{i-1}, h_j)
              and alpha_ij = softmax_j(e_ij), c_i = sum_j alpha_ij h_j (Eqs. 5 and 6);
              RNNencdec's one fixed c;
           b. the state s_i = f(s_{i-1}, y_{i-1}, c_i), the conditional GRU (Eq. 4);
        3. the deep output t_i = maxout(U_o s_{i-1} + V_o E y_{i-1} + C_o c_i) at every position
           at once (B x T x l); ``output_layer`` then gives W_o t_i, whose softmax is p(y_i).

        Returns t_i, alpha_i (B x T x S, or None) and s_T. Step 2 is this code made fast, never
        another writing of it (``bahdanau_plugin/speed``): ``step`` compiled, and on a GPU in
        training the loop of ``recur`` replayed from CUDA graphs."""
        # 1. E y_{i-1} (B x T x m) and W E y_{i-1} (B x T x 3n), all positions at once
        embedded = self.dropout_module(self.embed_tokens(prev_output_tokens))
        input_drives = self.gru.project_inputs(embedded)
        # 2. s_{i-1}: B x T x n, c_i: B x T x 2n (RNNsearch), alpha_i: B x T x S or None; s_T
        prev_states, contexts, alphas, state = speed.captured(self.recur)(
            input_drives, encoder_out, cache
        )
        maxout = self.deep_output(prev_states, embedded, contexts)  # 3. t_i: B x T x l
        return self.dropout_module(maxout), alphas, state

    def recur(
        self, input_drives: Tensor, encoder_out: Dict[str, Tensor], cache: Dict[str, Tensor]
    ) -> Tuple[Tensor, Tensor, Optional[Tensor], Tensor]:
        """Eq. (4) over the target positions from s_0 = cache["state"], given W E y_{i-1} at every
        position (B x T x 3n): s_{i-1} and c_i at every position (B x T x n, B x T x context),
        alpha_i (B x T x S, or None), and the last state s_T (to go on decoding)."""
        step = speed.compiled(self.step)  # this decoder's own step, compiled where it can be
        state = cache["state"]  # s_0: B x n
        prev_states, contexts, alphas = [], [], []
        for input_drive in input_drives.unbind(dim=1):  # so that each step's gradient is a view
            prev_states.append(state)
            context, alpha, state = step(input_drive, state, encoder_out, cache)
            contexts.append(context)
            alphas.append(alpha)
        attn = torch.stack(alphas, 1) if alphas[0] is not None else None
        return torch.stack(prev_states, 1), torch.stack(contexts, 1), attn, state

    def step(
        self,
        input_drive: Tensor,
        state: Tensor,
        encoder_out: Dict[str, Tensor],
        cache: Dict[str, Tensor],
    ) -> Tuple[Tensor, Optional[Tensor], Tensor]:
        """One target position, from s_{i-1} (B x n) and W E y_{i-1} (B x 3n): c_i (B x context),
        alpha_i (B x S, or None) and s_i (B x n)."""
        # a. c_i, C c_i (B x 3n) and alpha_i, from s_{i-1}
        context, context_drive, alpha = self.context(state, encoder_out, cache)
        # b. s_i = f(s_{i-1}, y_{i-1}, c_i), Eq. (4)
        return context, alpha, self.gru(input_drive + context_drive, state)

    def context(
        self, state: Tensor, encoder_out: Dict[str, Tensor], cache: Dict[str, Tensor]
    ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """For s_{i-1} ((B k) x n: a beam search's k rows per sentence): the context c_i, its term
        C c_i in the GRU's pre-activations, and alpha_i ((B k) x S) if there is attention."""
        if self.attention is None:  # RNNencdec: the same c at every position, and no alignment
            return encoder_out["summary"], cache["context_drive"], None
        # RNNsearch: the alignment model (Eqs. 5 and 6). The k rows of a sentence read its h_j,
        # U_a h_j and padding mask, kept one row per sentence (B x S x ...: beam_rows.py).
        sentences = cache["annotations"].size(0)
        context, alpha = self.attention(
            state.unflatten(0, (sentences, -1)),  # B x k x n
            cache["annotations"],
            cache["projected_annotations"],
            encoder_out["padding_mask"],
        )  # B x k x 2n, B x k x S, in the alignment model's precision
        # back in the model's precision, the state's: not read from encoder_out's h_j, which in
        # float32 is the cache's h_j itself (an alias that keyed a search's compiled step until a
        # reorder of finished sentences ended it)
        context = context.flatten(0, 1).to(state.dtype)
        return context, self.gru.project_context(context), alpha.flatten(0, 1)

    def output_layer(self, features: Tensor) -> Tensor:
        return self.output_projection(features)  # W_o t_i, Eq. (A.2.2); softmax in the criterion

    def initial_cache(self, encoder_out: Dict[str, Tensor]) -> Dict[str, Tensor]:
        """What the steps read, computed once per batch: what does not depend on i, and the initial
        state s_0 = tanh(W_s summary) (A.2.2)."""
        if self.attention is not None:
            # h_j in the alignment model's precision, and U_a h_j (footnote 3 of A.1.2): a tensor
            # of its own, not the view a product returns, as after a search's reorder drops
            # finished sentences (a view's base keys a search's compiled step)
            annotations = self.attention.own_precision(encoder_out["annotations"])
            cache = {
                "annotations": annotations,  # B x S x 2n
                "projected_annotations": self.attention.project_annotations(annotations).clone(),
            }  # B x S x n'
        else:
            cache = {"context_drive": self.gru.project_context(encoder_out["summary"])}  # C c
        cache[SENTENCES], cache[CHECKED] = encoder_out[SENTENCES], False
        cache["state"] = torch.tanh(self.initial_state(encoder_out["summary"]))  # s_0: B x n
        return cache

    def _cache(self, encoder_out, incremental_state) -> Dict[str, Tensor]:
        cache = None
        if incremental_state is not None:
            cache = self.get_incremental_state(incremental_state, "cache")
        return self.initial_cache(encoder_out) if cache is None else cache

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is None:
            return
        # Only the state differs between the beams of a sentence; the rest comes from its source.
        reordered = reorder_rows(
            cache, new_order, per_row=["state"], per_sentence=self.per_sentence
        )
        self.set_incremental_state(incremental_state, "cache", reordered)
