"""Bad input gets a JSON error that says what is wrong, with its 4xx status, and the server keeps
serving: every test ends with a good request that must succeed."""

import asyncio
import http.client
import json
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

GOOD = {"text": "the dog sees a cat", "beam": 2}
IN_FLIGHT = 200
MAX_BODY_BYTES = 256 * 1024  # bahdanau-serve's default --max-body-bytes
WORDS = "the big dog sees a small cat".split()


def assert_still_serving(server) -> None:
    (translation,) = server.translate(GOOD)
    assert translation["hypotheses"][0]["translation"]
    assert "Traceback" not in server.output()


def assert_refused(response, status, *words) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "\n" not in message
    for word in words:
        assert word in message


def test_empty_text_is_refused(server):
    assert_refused(server.post({"text": ""}), 422, "text", "empty")
    assert_still_serving(server)


def test_text_of_whitespace_only_is_refused(server):
    assert_refused(server.post({"text": " \t\n "}), 422, "text", "whitespace")
    assert_still_serving(server)


def test_text_of_control_characters_only_is_refused(server):
    """The tokenizer drops them: the model would get the end of sentence alone."""
    response = server.post({"text": ["the dog sees a cat", "\u0001\u0002"]})
    assert_refused(response, 422, "text[1]", "no word once tokenized")
    assert_still_serving(server)


def test_text_of_invisible_format_characters_only_is_refused(server):
    """The tokenizer keeps them, as a word the model does not know: it would make a sentence up."""
    response = server.post({"text": "\u200b \u200e\u200b"})
    assert_refused(response, 422, "the text", "no word once tokenized", "U+200B")
    assert_still_serving(server)


@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\r", "\n\n"])
def test_a_text_of_several_lines_is_refused_not_translated_as_one_sentence(server, line_break):
    """fairseq-interactive translates each line apart; the tokenizer reads a line break as a
    space."""
    response = server.post({"text": ["the dog sees a cat", f"the big dog{line_break}sees a cat"]})
    assert_refused(response, 422, "text[1]", "lines", "a sentence of its own")
    assert_still_serving(server)


def test_a_line_break_at_the_end_of_a_text_leaves_it_one_sentence(server):
    (translation,) = server.translate({"text": "the dog sees a cat\r\n", "beam": 2})
    assert translation == server.translate({"text": "the dog sees a cat", "beam": 2})[0]


def test_a_5000_token_line_is_refused_naming_the_limit_and_its_option(server):
    response = server.post(
        {"text": " ".join(["the big dog sees a small cat"] * 715)}
    )  # 5,005 words
    assert_refused(response, 413, "5,005 tokens", "1,024", "--max-source-tokens")
    assert_still_serving(server)


def test_a_word_over_the_limit_is_refused_naming_the_limit_and_its_option(server):
    response = server.post({"text": "the dog " + "x" * 150})
    assert_refused(response, 413, "150 characters", "100", "--max-word-chars")
    assert_still_serving(server)


def test_8_sentences_of_1000_words_at_beam_64_are_refused_naming_the_limit_and_its_option(server):
    sentence = " ".join((WORDS * 143)[:1000])
    response = server.post({"text": [sentence] * 8, "beam": 64})
    assert_refused(
        response, 413, "512,000 beam tokens", "16,384", "--max-request-beam-tokens", "smaller beam"
    )
    assert_still_serving(server)


def _headers_only(server, headers) -> http.client.HTTPConnection:
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    connection.putrequest("POST", "/translate")
    for name, value in headers.items():
        connection.putheader(name, value)
    connection.endheaders()
    return connection


def _refusal(connection: http.client.HTTPConnection):
    response = connection.getresponse()
    return response.status, json.loads(response.read())["error"]


def test_a_body_longer_than_the_limit_is_refused_before_a_byte_of_it_is_sent(server):
    connection = _headers_only(server, {"Content-Length": 10 * 1024 * 1024})
    status, message = _refusal(connection)  # no body sent: the server did not wait for it
    connection.close()
    assert status == 413 and "\n" not in message
    assert "10,485,760 bytes" in message and "262,144" in message
    assert "--max-body-bytes" in message
    assert_still_serving(server)


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(server):
    connection = _headers_only(server, {"Transfer-Encoding": "chunked"})
    chunk = b"x" * 65536
    for _ in range(MAX_BODY_BYTES // len(chunk) + 1):
        connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    status, message = _refusal(connection)  # the body never ends: the answer comes without it
    connection.close()
    assert status == 413 and "is over this server's limit of 262,144 bytes" in message
    assert_still_serving(server)


async def _one_and_the_other(url, big_body, body):
    async with httpx.AsyncClient(timeout=120) as client:
        return await asyncio.gather(client.post(url, content=big_body), client.post(url, json=body))


def test_a_10_mb_body_is_refused_and_another_client_is_answered_meanwhile(server):
    big_body = json.dumps({"text": "the dog " * (10 * 1024 * 1024 // 8)}).encode()
    refused, answered = asyncio.run(_one_and_the_other(server.url + "/translate", big_body, GOOD))
    assert_refused(refused, 413, "--max-body-bytes")
    assert answered.status_code == 200, answered.text


@pytest.mark.parametrize("beam", [True, "3", 3.0])
def test_a_beam_that_is_not_a_json_integer_is_refused_not_converted(server, beam):
    response = server.post({"text": "the dog", "beam": beam})
    assert_refused(response, 422, "beam", "valid integer", f"got {beam!r}")
    assert_still_serving(server)


@pytest.mark.parametrize("field", ["beam", "nbest"])
def test_a_beam_or_nbest_of_null_is_refused_as_no_integer(server, field):
    """ "beam": null was taken for the server's --beam while "nbest": null was refused; leaving the
    field out asks for the default."""
    response = server.post({"text": "the dog", field: None})
    assert_refused(response, 422, f"{field}: Input should be a valid integer")
    assert_still_serving(server)


def test_a_lone_surrogate_in_the_text_is_refused_as_text_that_is_not_valid_unicode(server):
    response = server.post(b'{"text": "the \\ud800 dog"}')
    assert_refused(response, 422, "text", "not valid Unicode", "lone surrogate", "whole characters")
    assert_still_serving(server)


def test_a_body_that_is_not_json_is_a_400(server):
    assert_refused(server.post(b'{"text": "the dog'), 400, "not valid JSON")
    assert_still_serving(server)


@pytest.mark.parametrize(
    "body, word",
    [
        ({"sentence": "the dog"}, "text"),
        (["the dog"], "object"),
        ({"text": 42}, "text"),
        ({"text": ["the dog", None]}, "text[1]"),
        ({"text": "the dog", "beam": "wide"}, "beam"),
    ],
)
def test_a_json_body_of_the_wrong_shape_is_a_422_naming_the_field(server, body, word):
    assert_refused(server.post(body), 422, word, '"text"')
    assert_still_serving(server)


@pytest.mark.parametrize("beam", [0, -3, 10_000])
def test_a_beam_out_of_range_is_refused(server, beam):
    assert_refused(server.post({"text": "the dog", "beam": beam}), 422, "beam", str(beam))
    assert_still_serving(server)


def test_nbest_larger_than_beam_is_refused(server):
    assert_refused(
        server.post({"text": "the dog", "beam": 2, "nbest": 3}), 422, "nbest (3)", "beam (2)"
    )
    assert_still_serving(server)


def test_a_key_given_twice_is_a_400_naming_it(server):
    """json keeps the last value of a repeated key: the first sentence would be lost unsaid."""
    response = server.post(b'{"text": "the dog sees a cat", "text": "a small red car"}')
    assert_refused(response, 400, "'text' more than once")
    assert_still_serving(server)


def test_a_body_of_100000_nested_arrays_is_a_400(server):
    response = server.post(b"[" * 100_000 + b"]" * 100_000)
    assert_refused(response, 400, "nests arrays or objects too deeply", '"text"')
    assert_still_serving(server)


def test_a_number_of_5000_digits_is_a_400(server):
    response = server.post(b'{"text": "the dog", "beam": ' + b"7" * 5000 + b"}")
    assert_refused(response, 400, "a number of more than 4,300 digits", '"text"')
    assert_still_serving(server)


def test_an_nbest_of_4000_digits_is_refused_in_a_short_line(server):
    response = server.post(b'{"text": "the dog", "nbest": ' + b"9" * 4000 + b"}")
    assert_refused(response, 422, "nbest", "less than or equal to 64")
    assert len(response.json()["error"]) < 300
    assert_still_serving(server)


def test_a_method_that_a_path_does_not_answer_is_a_405_naming_those_it_does(server):
    response = httpx.get(server.url + "/translate", timeout=60)
    assert_refused(response, 405, "/translate does not answer GET: it answers POST")
    assert response.headers["Allow"] == "POST"
    assert_still_serving(server)


def test_invalid_utf8_bytes_are_a_400(server):
    assert_refused(server.post(b'{"text": "the \xff\xfe dog \xc3("}'), 400, "UTF-8")
    assert_still_serving(server)


def _connection(server) -> socket.socket:
    address = urlsplit(server.url)
    return socket.create_connection((address.hostname, address.port))


def test_a_client_that_disconnects_before_its_body_is_complete(server):
    with _connection(server) as connection:
        connection.sendall(
            b"POST /translate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n" + b'{"text": "the dog'
        )
    assert_still_serving(server)


def test_a_client_that_disconnects_while_its_sentences_are_translated(server, test_sentences):
    body = json.dumps({"text": test_sentences * 4, "beam": 12}).encode()
    with _connection(server) as connection:
        connection.sendall(
            b"POST /translate HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.5)
    assert_still_serving(server)


async def _all_at_once(url, bodies):
    limits = httpx.Limits(max_connections=len(bodies))
    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        return await asyncio.gather(*(client.post(url, json=body) for body in bodies))


def test_200_requests_in_flight_at_once_are_all_answered_correctly(server, test_sentences):
    expected = {
        sentence: translation["hypotheses"][0]["translation"]
        for sentence, translation in zip(test_sentences, server.translate({"text": test_sentences}))
    }
    sentences = [test_sentences[number % len(test_sentences)] for number in range(IN_FLIGHT)]
    responses = asyncio.run(
        _all_at_once(server.url + "/translate", [{"text": sentence} for sentence in sentences])
    )
    assert [response.status_code for response in responses] == [200] * IN_FLIGHT
    assert [
        response.json()["translations"][0]["hypotheses"][0]["translation"] for response in responses
    ] == [expected[sentence] for sentence in sentences]
    assert_still_serving(server)
