"""bahdanau-serve: translate with a trained checkpoint from a browser page and a JSON API.

    bahdanau-serve CHECKPOINT --data DATA_BIN
                   [--tokenizer moses --bpe subword_nmt --bpe-codes CODES]
                   [--beam 5] [--max-len-b 200] [--lenpen 1]
                   [--host 127.0.0.1 --port 8000] [--cpu]
                   [--max-connections 1000] [--idle-timeout 5] [--user-dir DIR]

then open http://127.0.0.1:8000/ , or POST {"text": "..."} to /translate. Every path is read
from the folder the command is run in.
"""

import argparse
import logging
import os
import socket
import sys

import uvicorn

import bahdanau_plugin  # noqa: F401  (registers the models, as --user-dir does)
from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_plugin.options import path_argument, positive_int
from bahdanau_plugin.speed.setting import SEARCH_SETTING

from ..search_options import add_length_and_ranking, search
from ..user_dir import add_user_dir, import_user_dir
from .api import MAX_BEAM, create_app
from .batching import ModelThread
from .connections import Server, bound_socket
from .file_limit import connection_room
from .limits import Limits
from .repeated_logs import log_repeats_once_per_interval
from .translator import Translator

DEFAULT_LIMITS = Limits()
# the longest --batch-wait-ms: a sentence waits that long at most before it is translated alone
MAX_BATCH_WAIT_MS = 10_000


def port_number(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port number (1 to 65535)")
    return value


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bahdanau-serve", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=path_argument, help="a checkpoint_*.pt file")
    add_user_dir(parser)
    parser.add_argument(
        "--data",
        type=path_argument,
        required=True,
        help="the fairseq data-bin folder it was trained with",
    )
    parser.add_argument(
        "--tokenizer",
        choices=["moses", "nltk", "space"],
        help="as fairseq-interactive's --tokenizer: raw text in, detokenized text out",
    )
    parser.add_argument("--bpe", choices=["subword_nmt"], help="as fairseq-interactive's --bpe")
    parser.add_argument(
        "--bpe-codes",
        type=path_argument,
        help="the subword-nmt codes (OUT/bpe.codes of bahdanau-prepare-data --bpe)",
    )
    parser.add_argument("--source-lang", help="default: from the data folder's file names")
    parser.add_argument("--target-lang", help="default: from the data folder's file names")
    parser.add_argument(
        "--beam",
        type=positive_int,
        default=5,
        help="beam size when a request gives none (default: 5)",
    )
    add_length_and_ranking(parser)  # for every request, as fairseq-interactive's
    parser.add_argument(
        "--host", default="127.0.0.1", help="default: 127.0.0.1 (this machine only)"
    )
    parser.add_argument("--port", type=port_number, default=8000, help="default: 8000")
    parser.add_argument(
        "--cpu", action="store_true", help="run on the CPU even when there is a GPU"
    )
    connections = parser.add_argument_group("connections")
    connections.add_argument(
        "--max-connections",
        type=positive_int,
        default=1000,
        help="most connections open at once, fewer if the file limit (ulimit -n) leaves room for "
        "fewer; past it the connection idle longest is closed, or, when every one has a request "
        "under way, the new one is answered 503 (default: %(default)s)",
    )
    connections.add_argument(
        "--idle-timeout",
        type=positive_int,
        default=5,
        help="seconds a connection may stay open without sending a request, after it opens or "
        "after its last response, or without sending more of a request's body "
        "(default: %(default)s, uvicorn's keep-alive timeout)",
    )
    limits = parser.add_argument_group(
        "what one request may ask (over a limit it is refused with 413, saying which)"
    )
    limits.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=DEFAULT_LIMITS.body_bytes,
        help="the largest request body, refused before it is read (default: %(default)s)",
    )
    limits.add_argument(
        "--max-word-chars",
        type=positive_int,
        default=DEFAULT_LIMITS.word_chars,
        help="the longest word after tokenization, before BPE (default: %(default)s)",
    )
    limits.add_argument(
        "--max-source-tokens",
        type=positive_int,
        default=DEFAULT_LIMITS.source_tokens,
        help="the longest sentence, in tokens after tokenization and BPE (default: %(default)s)",
    )
    limits.add_argument(
        "--max-request-beam-tokens",
        type=positive_int,
        default=DEFAULT_LIMITS.request_beam_tokens,
        help="a request's tokens x beam, summed over its sentences (default: %(default)s)",
    )
    parser.add_argument(
        "--max-batch-sentences",
        type=positive_int,
        default=64,
        help="most sentences translated together (default: 64)",
    )
    parser.add_argument(
        "--max-batch-beam-tokens",
        type=positive_int,
        default=8192,
        help="most tokens x beam translated together, padding included; a longer sentence is "
        "translated alone (default: 8192)",
    )
    parser.add_argument(
        "--batch-wait-ms",
        type=wait_milliseconds,
        default=20.0,
        help="how long a sentence waits for others to batch with, at most "
        f"{MAX_BATCH_WAIT_MS:,} (default: 20)",
    )
    return parser


def wait_milliseconds(text: str) -> float:
    """A wait from 0 to MAX_BATCH_WAIT_MS: an infinite one failed in the model's thread (every
    request then hung), a NaN waited until a batch filled."""
    value = float(text)
    if not 0 <= value <= MAX_BATCH_WAIT_MS:
        raise argparse.ArgumentTypeError(
            f"{text} is not a number of milliseconds from 0 to {MAX_BATCH_WAIT_MS:,}"
        )
    return value


def from_here(args: argparse.Namespace) -> None:
    """Every path absolute, as typed from the current folder: the hub would read a relative
    --data beside the checkpoint."""
    for name in ("checkpoint", "data", "bpe_codes"):
        if getattr(args, name) is not None:
            setattr(args, name, getattr(args, name).absolute())


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for path in (args.checkpoint, args.data, args.bpe_codes):
        if path is not None and not path.exists():
            parser.error(f"{path} does not exist")
    if (args.bpe is None) != (args.bpe_codes is None):
        parser.error(
            "--bpe subword_nmt and --bpe-codes go together: give both, as the data was prepared"
        )
    if (args.source_lang is None) != (args.target_lang is None):
        parser.error(
            "--source-lang and --target-lang go together: with one alone, both would be taken "
            "from the data folder's file names and the one given ignored; give both, or neither"
        )
    if args.beam > MAX_BEAM:
        parser.error(f"--beam {args.beam} is over {MAX_BEAM}, the largest beam the server searches")
    if args.max_request_beam_tokens < args.beam:
        parser.error(
            f"--max-request-beam-tokens {args.max_request_beam_tokens} is under --beam "
            f"{args.beam}: every request would be refused, one word included: raise it"
        )


def _listening(parser: argparse.ArgumentParser, args: argparse.Namespace) -> socket.socket:
    """The server's socket, bound before the model loads (a while, at the paper's sizes): a --host
    that names no address of this machine, or a --port in use, is one line at once."""
    try:
        return bound_socket(args.host, args.port)
    except socket.gaierror as error:
        parser.error(
            f"--host {args.host} names no address ({error.strerror}): give this machine's name "
            "or address, such as 127.0.0.1 (this machine only) or 0.0.0.0 (every network)"
        )
    except OSError as error:
        parser.error(
            f"cannot listen on --host {args.host} --port {args.port}: "
            f"{(error.strerror or str(error)).lower()}: give another --port (or --host)"
        )


def _connections_within_the_file_limit(asked: int) -> int:
    """How many connections the server may hold, with a warning when the file limit leaves room
    for fewer than asked; before the model loads, since a limit with room for none ends the
    command."""
    room = connection_room(asked)
    if room.connections < asked:
        print(
            f"warning: the file limit (ulimit -n {room.file_limit}) leaves room for "
            f"{room.connections:,} connections, not --max-connections {asked:,}: raise it "
            f"(ulimit -n {room.files_needed}) for them all",
            file=sys.stderr,
            flush=True,
        )
    return room.connections


def main(argv=None) -> None:
    print_errors_as_one_line()  # bad input ends the command with one line, not a traceback
    arguments = parser()
    args = arguments.parse_args(argv)
    _check(arguments, args)
    import_user_dir(args.user_dir)  # before the port is taken: a bad one is one line at once
    listener = _listening(arguments, args)
    from_here(args)
    max_connections = _connections_within_the_file_limit(args.max_connections)
    logging.getLogger("fairseq").setLevel(logging.WARNING)  # not a line per batch
    # A server runs long: its warm-up compiles the search before it answers, on a CPU too (where
    # by default a search compiles only once it has run a while), unless the variable is set.
    os.environ.setdefault(SEARCH_SETTING, "0")
    model_thread = ModelThread()  # loads the model and translates with it; this thread serves HTTP
    translator = model_thread.call(
        Translator.load,
        args.checkpoint,
        args.data,
        max_source_tokens=args.max_source_tokens,
        max_batch_sentences=args.max_batch_sentences,
        cpu=args.cpu,
        tokenizer=args.tokenizer,
        bpe=args.bpe,
        bpe_codes=args.bpe_codes,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        search=search(args),
    ).result()
    app = create_app(
        translator,
        Limits(
            body_bytes=args.max_body_bytes,
            word_chars=args.max_word_chars,
            source_tokens=args.max_source_tokens,
            request_beam_tokens=args.max_request_beam_tokens,
        ),
        default_beam=args.beam,
        max_batch_sentences=args.max_batch_sentences,
        max_batch_beam_tokens=args.max_batch_beam_tokens,
        max_wait_s=args.batch_wait_ms / 1000,
        model_name=str(args.checkpoint),
        model_thread=model_thread,
    )
    print(
        f"bahdanau-serve: {translator.architecture} on {translator.device}, open "
        f"http://{args.host}:{args.port}/",
        flush=True,
    )
    config = uvicorn.Config(
        app, host=args.host, port=args.port, timeout_keep_alive=args.idle_timeout
    )  # configures uvicorn's logging: the filter comes after
    log_repeats_once_per_interval()
    Server(config, listener, max_connections, args.idle_timeout).run()


if __name__ == "__main__":
    main()
