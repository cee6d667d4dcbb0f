"""The web layer of bahdanau-serve (FastAPI): the page, POST /translate and GET /health.

It validates requests with pydantic (strict types: JSON's true is not a beam, nor is "3"), holds
them to the server's limits (limits.py), hands their sentences to the BatchingWorker that owns the
model and awaits their futures, so the event loop never waits on the model. Every error is JSON,
{"error": "..."}, a line that says what is wrong and what to do, with its 4xx status.
"""

import asyncio
import collections
import dataclasses
import json
import re
import reprlib
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, List, Optional

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from bahdanau_plugin.errors import PluginError

from .batching import BatchingWorker, ModelThread, ServerBusy
from .limits import BodyLimit, Limits, NoWords, OverLimit, sentences_within
from .translator import Sentence, Translation, Translator

STATIC = Path(__file__).resolve().parent / "static"
MAX_BEAM = 64
MAX_SENTENCES_PER_REQUEST = 64
CLIENT_CLOSED_REQUEST = (
    499  # nginx's status for a client that left before its answer: nobody reads it
)
EXPECTED = (
    'send {"text": "a sentence" or ["a list", "of sentences"], "beam": 1 to %d, "nbest": 1 to beam}'
    % MAX_BEAM
)
JSON_TYPES = {list: "an array", str: "a string", bool: "true or false"}
# where fairseq-interactive ends a line: Python reads its input with universal newlines
LINE_BREAK = re.compile(r"\r\n|\r|\n")


class UnreadableBody(PluginError):
    """A body that is not JSON in UTF-8, or that could be read two ways (a key given twice)."""


STATUS_OF = {UnreadableBody: 400, NoWords: 422, OverLimit: 413, ServerBusy: 503}


def _a_sentence(text: str) -> str:
    if not text.strip():
        raise ValueError("is empty or only whitespace: send a sentence to translate")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # JSON's "\ud800" escape: half of a UTF-16 pair
        raise ValueError(
            f"is not valid Unicode: character {error.start + 1:,} is a lone surrogate "
            f"({text[error.start]!r}, half of a UTF-16 pair, as when a string is cut inside an "
            "emoji): send whole characters"
        ) from None
    return text


def _one_line(text: str) -> str:
    """A text of one line: the tokenizer reads a line break as a space, so that lines sent as one
    text were translated as one sentence, where fairseq-interactive translates each line apart.
    Line breaks at its ends are none between lines (fairseq-interactive strips each line)."""
    lines = LINE_BREAK.split(text.strip())
    if len(lines) > 1:
        raise ValueError(
            f"holds {len(lines)} lines, which would be translated as one sentence: send each "
            "line as a sentence of its own, an item of the list, or join them with spaces where "
            "they are one sentence"
        )
    return text


def _one_sentence_as_a_list(text):
    return [text] if isinstance(text, str) else text


class TranslateRequest(BaseModel):
    """The body of POST /translate; beam defaults to the server's --beam (validation context)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: Annotated[
        List[Annotated[str, AfterValidator(_a_sentence), AfterValidator(_one_line)]],
        BeforeValidator(_one_sentence_as_a_list),
        Field(min_length=1, max_length=MAX_SENTENCES_PER_REQUEST),
    ]
    # None where the body gives none (a default pydantic does not validate), then --beam; a null
    # given is refused as nbest's is: no JSON integer, and the server's beam not asked for by name
    beam: int = Field(None, ge=1, le=MAX_BEAM)
    nbest: int = Field(1, ge=1, le=MAX_BEAM)  # a bound of its own: a huge one gets a short line

    @model_validator(mode="after")
    def _default_beam_and_nbest_within_it(self, info: ValidationInfo) -> "TranslateRequest":
        if self.beam is None:
            self.beam = info.context["default_beam"]
        if self.nbest > self.beam:
            raise ValueError(
                f"nbest ({self.nbest}) cannot be larger than beam ({self.beam}): "
                "beam search keeps only beam hypotheses"
            )
        return self


@dataclasses.dataclass
class TranslateResponse:
    translations: List[Translation]  # one per sentence of the request, in its order


def _location(parts) -> str:
    """("text", 0) -> "text[0]"."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts).lstrip(
        "."
    )


def _object(pairs: list) -> dict:
    """A JSON object, refused where it gives a key twice: json keeps the last value silently."""
    repeated = [key for key, count in collections.Counter(k for k, _ in pairs).items() if count > 1]
    if repeated:
        raise UnreadableBody(
            f"the body gives the key {reprlib.repr(repeated[0])} more than once: send each "
            f"field once: {EXPECTED}"
        )
    return dict(pairs)


def _read(body: bytes, default_beam: int) -> TranslateRequest:
    """The request in the body. Python's json module reads it rather than pydantic's parser, which
    refuses a lone surrogate escape as "unexpected end of hex escape": JSON's grammar allows one,
    and the text's validator then says what is wrong with it."""
    try:
        value = json.loads(body.decode("utf-8"), object_pairs_hook=_object)
    except UnicodeDecodeError as error:
        raise UnreadableBody(
            f"the body is not UTF-8 (byte {error.object[error.start]:#04x} at offset "
            f"{error.start:,}): send JSON in UTF-8: {EXPECTED}"
        ) from None
    except json.JSONDecodeError as error:
        raise UnreadableBody(f"the body is not valid JSON ({error}): {EXPECTED}") from None
    except RecursionError:  # the parser recurses once per level of arrays and objects
        raise UnreadableBody(
            "the body nests arrays or objects too deeply to be read (more than about "
            f"{sys.getrecursionlimit():,} levels): {EXPECTED}"
        ) from None
    except ValueError:  # Python's limit on an integer's digits (CVE-2020-10735)
        raise UnreadableBody(
            f"the body has a number of more than {sys.get_int_max_str_digits():,} digits: "
            f"{EXPECTED}"
        ) from None
    return TranslateRequest.model_validate(value, context={"default_beam": default_beam})


def _explain(error: dict) -> str:
    if error["type"] == "value_error":
        message = str(error["ctx"]["error"])
    elif error["type"] == "model_type":  # the body itself
        kind = JSON_TYPES.get(type(error["input"]), "a number or null")
        message = f"the body is {kind}, not an object"
    else:
        message = error["msg"]
    if isinstance(error.get("input"), (int, float, str)):
        message += f" (got {reprlib.repr(error['input'])})"
    location = _location(error["loc"])
    return f"{location}: {message}" if location else message


def _invalid_request(_request: Request, error: ValidationError) -> JSONResponse:
    """422 for JSON of the wrong shape or values."""
    errors = error.errors(include_url=False)
    return _error(422, "; ".join(dict.fromkeys(map(_explain, errors))) + f" -- {EXPECTED}")


def _refused(_request: Request, error: PluginError) -> JSONResponse:
    return _error(STATUS_OF.get(type(error), 400), str(error))


def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    """Starlette's errors (404, 405), with their headers: 405's Allow names the methods."""
    message = str(error.detail)
    if error.status_code == 405:
        message = (
            f"{request.url.path} does not answer {request.method}: it answers "
            f"{error.headers['Allow']}"
        )
    return _error(error.status_code, message, error.headers)


def _failed(_request: Request, error: Exception) -> JSONResponse:
    return _error(
        500, f"the translation failed ({type(error).__name__}: {error}); the server goes on"
    )


def _error(status: int, message: str, headers: Optional[dict] = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _client_gone(request: Request) -> None:
    """Returns when the client disconnects: after the body, the server's next message is that."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_client_leaves(request: Request, work):
    """The result of the coroutine work, or None when the client leaves first: work is then
    cancelled, and with it the sentences still waiting for the model."""
    task, watcher = asyncio.ensure_future(work), asyncio.ensure_future(_client_gone(request))
    done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        watcher.cancel()
        return task.result()
    task.cancel()
    return None


async def _translations(worker: BatchingWorker, sentences: List[Sentence]) -> List[Translation]:
    """Every sentence's translation, or the first sentence's error."""
    futures = worker.submit(sentences)
    # each future's exception retrieved, or asyncio logs the ones after the first as never retrieved
    results = await asyncio.gather(*map(asyncio.wrap_future, futures), return_exceptions=True)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def create_app(
    translator: Translator,
    limits: Limits,
    default_beam: int = 5,
    max_batch_sentences: int = 64,
    max_batch_beam_tokens: int = 8192,
    max_wait_s: float = 0.02,
    model_name: str = "",
    model_thread: Optional[ModelThread] = None,
) -> FastAPI:
    """model_thread: the thread that loaded the translator, to run it too (batching.py says why)."""
    worker = BatchingWorker(
        translator.translate,
        max_batch_sentences,
        max_batch_beam_tokens,
        max_wait_s,
        model_thread=model_thread,
    )
    started = time.monotonic()

    @asynccontextmanager
    async def running_worker(_app):
        worker.start()
        yield
        worker.stop()

    # No /docs: FastAPI's documentation pages load their scripts from a CDN; /openapi.json stays.
    app = FastAPI(title="bahdanau-serve", lifespan=running_worker, docs_url=None, redoc_url=None)
    app.add_middleware(BodyLimit, max_bytes=limits.body_bytes)
    app.add_exception_handler(ValidationError, _invalid_request)
    app.add_exception_handler(PluginError, _refused)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _failed)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    # HEAD as well as GET, as Starlette's own routes and static files answer it (monitors use it)
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.api_route("/health", methods=["GET", "HEAD"])
    async def health() -> dict:
        return {
            "model": model_name,
            "architecture": translator.architecture,
            "alignment": translator.has_alignment,
            "device": translator.device,
            "uptime_s": round(time.monotonic() - started, 3),
            "beam": default_beam,
            **translator.search,
            "max_beam": MAX_BEAM,
            "max_sentences_per_request": MAX_SENTENCES_PER_REQUEST,
            **{f"max_{name}": value for name, value in dataclasses.asdict(limits).items()},
        }

    @app.post("/translate", response_model=TranslateResponse)
    async def translate(request: Request):
        """The body is read as JSON whatever its Content-Type says, so that `curl -d '{...}'`
        (which sends application/x-www-form-urlencoded) works as it is."""
        try:
            body = await request.body()
        except ClientDisconnect:
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        order = _read(body, default_beam)
        sentences = await run_in_threadpool(
            sentences_within, limits, translator, order.text, order.beam, order.nbest
        )
        translations = await _unless_client_leaves(request, _translations(worker, sentences))
        if translations is None:
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        # straight to JSON: FastAPI would validate the dataclasses again against response_model
        return JSONResponse(dataclasses.asdict(TranslateResponse(translations)))

    return app
