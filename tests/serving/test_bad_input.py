"""Bad input gets a JSON error that says what is wrong, with its 4xx status, and the server keeps
serving: every test ends with a good request that must succeed."""

import asyncio
import json
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

GOOD = {"text": "the dog sees a cat", "beam": 2}
IN_FLIGHT = 200


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


def test_a_5000_token_line_is_refused_naming_the_limit_and_its_option(server):
    response = server.post(
        {"text": " ".join(["the big dog sees a small cat"] * 715)}
    )  # 5,005 words
    assert_refused(response, 413, "5,005 tokens", "1,024", "--max-source-tokens")
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
