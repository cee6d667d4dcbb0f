"""A small RNNsearch that has learned some of the demo task (so its attention varies), trained once,
and bahdanau-serve processes on loopback ports, shared by the serving tests."""

import resource
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional

import httpx
import pytest

from bahdanau_tools.demo_recipe import OPTIMIZER

from ...support.paths import PLUGIN
from ...support.shared import made_once
from ...support.tools import fairseq_env, fairseq_tool, run

STARTUP_TIMEOUT_S = 180
SMALL_SIZES = [
    "--encoder-embed-dim",
    "32",
    "--decoder-embed-dim",
    "32",
    "--encoder-hidden-dim",
    "32",
    "--decoder-hidden-dim",
    "32",
    "--attention-dim",
    "32",
    "--maxout-dim",
    "16",
]
TEXT_OPTIONS = [
    "--tokenizer",
    "moses",
    "--source-lang",
    "en",
    "--target-lang",
    "fr",
]  # as fairseq-interactive's


@pytest.fixture(scope="session")
def serving_checkpoint(data_bin, tmp_path_factory) -> Path:
    """About 20 s of training: enough for translations that reorder, with peaked alignments."""

    def train(save_dir):
        run(
            "fairseq-train",
            data_bin,
            "--user-dir",
            PLUGIN,
            "--arch",
            "rnnsearch_50",
            *SMALL_SIZES,
            "--cpu",
            "--seed",
            "1",
            *OPTIMIZER,
            "--max-update",
            "400",
            "--disable-validation",
            "--save-dir",
            save_dir,
            "--no-epoch-checkpoints",
        )

    return made_once(tmp_path_factory, "serving", train) / "checkpoint_last.pt"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def limit_files(files: int):
    """For preexec_fn: the process may open this many files (soft and hard limit: `ulimit -n`)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    return limit


class Server:
    """A bahdanau-serve process, run in the folder cwd (by default this one), under a file limit
    if one is given, with these variables added to the tests' environment (where the models run
    eagerly); its output goes to a log file (a pipe no one reads fills up)."""

    def __init__(
        self,
        checkpoint: Path,
        data_bin: Path,
        log: Path,
        *options: str,
        cwd=None,
        file_limit: Optional[int] = None,
        env: Optional[dict] = None,
    ):
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = log
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            [
                fairseq_tool("bahdanau-serve"),
                str(checkpoint),
                "--data",
                str(data_bin),
                "--cpu",
                "--port",
                self.url.rsplit(":", 1)[1],
                *TEXT_OPTIONS,
                *options,
            ],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env={**fairseq_env(), **(env or {})},
            cwd=cwd,
            preexec_fn=None if file_limit is None else limit_files(file_limit),
        )
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(
                    f"bahdanau-serve exited ({self.process.returncode}):\n{self.output()[-3000:]}"
                )
            try:
                self.get("/health").raise_for_status()
                return
            except httpx.HTTPError:
                time.sleep(0.5)
        pytest.fail(
            f"bahdanau-serve did not answer in {STARTUP_TIMEOUT_S} s:\n{self.output()[-3000:]}"
        )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=60)

    def post(self, body, **options) -> httpx.Response:
        """POST /translate with body as JSON, or as it is when it is bytes."""
        content = {"content": body} if isinstance(body, bytes) else {"json": body}
        return httpx.post(self.url + "/translate", timeout=120, **content, **options)

    def translate(self, body) -> list:
        response = self.post(body)
        assert response.status_code == 200, response.text
        return response.json()["translations"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self._log_file.close()


@pytest.fixture(scope="session")
def server(serving_checkpoint, data_bin, tmp_path_factory):
    started = Server(serving_checkpoint, data_bin, tmp_path_factory.mktemp("server") / "server.log")
    yield started
    started.stop()


@pytest.fixture(scope="session")
def encdec_server(checkpoints, data_bin, tmp_path_factory):
    """An RNNencdec checkpoint served: a model without attention."""
    started = Server(
        checkpoints["rnnencdec_50"], data_bin, tmp_path_factory.mktemp("encdec") / "server.log"
    )
    yield started
    started.stop()


@pytest.fixture(scope="session")
def test_sentences(data_bin):
    return (data_bin.parent / "raw" / "test.en").read_text(encoding="utf-8").splitlines()


def interactive(data_bin, checkpoint, sentences, *options) -> str:
    """fairseq-interactive's output for the sentences, with the server's tokenizer options."""
    return run(
        "fairseq-interactive",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoint,
        "--cpu",
        *TEXT_OPTIONS,
        *options,
        stdin="\n".join(sentences) + "\n",
    )
