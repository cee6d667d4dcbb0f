"""What one request may ask of bahdanau-serve, refused up front (413) in one line that names the
limit and the option that raises it, so that no request holds the other clients for long.

- the body's bytes (BodyLimit, before the body is read);
- a word's characters, before BPE: subword-nmt segments a word in time quadratic in its length;
- a sentence's tokens after tokenization and BPE;
- the request's beam tokens: its sentences' tokens x beam, summed, what its translation costs.

The text is tokenized here, in a worker thread of the web layer (the tokenizers are pure Python),
so the model's thread only ever sees sentences that are within the limits. A text that the
tokenizer leaves without a word (control characters alone, which it drops, or invisible format
characters such as U+200B ZERO WIDTH SPACE alone, which it keeps: the plugin's rule,
unicode_form.holds_a_word) is refused here too (NoWords, 422): the model, given the end of
sentence or an unknown word alone, would make a sentence up.
"""

import reprlib
from dataclasses import dataclass
from typing import List, Optional, Sequence

from starlette.datastructures import Headers

from bahdanau_plugin.errors import PluginError
from bahdanau_plugin.unicode_form import holds_a_word

from .translator import Sentence, Translator


class OverLimit(PluginError):
    """A request over one of the server's limits."""


class NoWords(PluginError):
    """A text with nothing left to translate once tokenized."""


@dataclass(frozen=True)
class Limits:
    """The defaults are bahdanau-serve's (docs/serving.md says why each)."""

    body_bytes: int = 256 * 1024
    word_chars: int = 100
    source_tokens: int = 1024
    request_beam_tokens: int = 16_384


def _body_too_large(limit: int, size: Optional[int] = None) -> OverLimit:
    body = "the body" if size is None else f"the body ({size:,} bytes)"
    return OverLimit(
        f"{body} is over this server's limit of {limit:,} bytes (bahdanau-serve --max-body-bytes): "
        "send fewer sentences per request"
    )


class BodyLimit:
    """ASGI middleware: a request body over max_bytes is refused (OverLimit) when the application
    asks for it, before a byte of it is read when its Content-Length says so, or as soon as the
    bytes received pass the limit (a chunked body). The application never holds the rest; uvicorn
    discards it after the answer, and the connection stays open."""

    def __init__(self, app, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")  # an integer: uvicorn checks it
        received = 0

        async def limited_receive():
            nonlocal received
            if declared is not None and int(declared) > self.max_bytes:
                raise _body_too_large(self.max_bytes, int(declared))
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise _body_too_large(self.max_bytes)
            return message

        await self.app(scope, limited_receive, send)


def sentences_within(
    limits: Limits, translator: Translator, texts: Sequence[str], beam: int, nbest: int
) -> List[Sentence]:
    """The texts tokenized and BPE'd as the model reads them, or OverLimit for the first limit the
    request is over. Takes time in proportion to the text: run it in a worker thread."""
    sentences = []
    for index, text in enumerate(texts):
        where = "the text" if len(texts) == 1 else f"text[{index}]"
        tokenized = translator.tokenize(text)
        # the words the plugin's BPE segments, split at any whitespace as fairseq reads a line: a
        # tab or a no-break space between words (kept where there is no --tokenizer) parts them
        longest = max(tokenized.split(), key=len, default="")
        if len(longest) > limits.word_chars:
            raise OverLimit(
                f"{where} has a word of {len(longest):,} characters ({reprlib.repr(longest)}), "
                f"over this server's limit of {limits.word_chars:,} (bahdanau-serve "
                "--max-word-chars): send words separated by spaces"
            )
        tokens = translator.apply_bpe(tokenized)
        if not holds_a_word(tokens):
            raise NoWords(
                f"{where} has no word once tokenized ({reprlib.repr(text)}: control characters are "
                "dropped, and format characters such as U+200B are not words): send a sentence "
                "to translate"
            )
        if len(tokens) > limits.source_tokens:
            raise OverLimit(
                f"{where} has {len(tokens):,} tokens after tokenization and BPE, over this "
                f"server's limit of {limits.source_tokens:,} (bahdanau-serve --max-source-tokens): "
                "split it into shorter sentences"
            )
        sentences.append(Sentence(tuple(tokens), beam, nbest))
    requested = sum(sentence.beam_tokens for sentence in sentences)
    if requested > limits.request_beam_tokens:
        raise OverLimit(
            f"the request asks for {requested:,} beam tokens (tokens after tokenization and BPE x "
            f"beam {beam}, summed over its {len(sentences):,} sentences), over this server's limit "
            f"of {limits.request_beam_tokens:,} (bahdanau-serve --max-request-beam-tokens): send "
            "fewer or shorter sentences per request, or a smaller beam"
        )
    return sentences
