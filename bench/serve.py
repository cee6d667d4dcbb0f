#!/usr/bin/env python3
"""bahdanau-serve under load against fairseq-interactive, on the same checkpoint, beam, input and
CPU threads, measured in one run.

Input: the English side of Multi30k's test_2016_flickr (read from ../shared/data/multi30k). Each
repeat measures, one after the other:

- fairseq-interactive --buffer-size 64 --batch-size 64: sentences per second from the moment it
  is ready for input until it prints the last translation, and its peak resident memory;
- bahdanau-serve with --clients concurrent clients on loopback, each sending one sentence per
  request and the next when it has the answer: sentences per second, latency percentiles, and the
  server's peak resident memory (VmHWM); then the latency of one 15-word sentence sent alone,
  again and again, with no other load;
- small requests beside a large one: --small-clients clients send that 15-word sentence again and
  again while one other client sends a large request (--large-sentences sentences of at least
  --large-words words, at --large-beam) --large-requests times, then the issue's huge request
  (8 sentences of 1,000 words at beam 64) once: the small requests' latency percentiles, each
  large request's status and time, and the server's peak memory after each.

Then, once, on a server started under a file limit (--idle-file-limit, 1,024: `ulimit -n`, soft and
hard): that 15-word sentence's latency, sent --latency-requests times one after another, each on a
new connection, first alone and then while --idle-connections (1,100) connections that send nothing
are open; how many of those the server closed, and what its log holds (--idle-only measures this
alone).

Without --checkpoint it trains one (Multi30k with BPE, rnnsearch at bench/benchmark.py's sizes,
--train-updates updates: a speed benchmark needs a Multi30k-sized model, not a converged one).
Not part of the test suite (how long it takes, training included: bench/README.md).
"""

import argparse
import asyncio
import collections
import gzip
import logging
import os
import re
import itertools
import resource
import select
import socket
import statistics
import subprocess
import sys
import threading
import time
from argparse import Namespace
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import torch

from bench.common import prepare_multi30k, train
from bench.paths import MULTI30K, PLUGIN

READY = "Type the input sentence and press return"
LATENCY_WORDS = 15
HUGE = (8, 1000, 64)  # the huge request: sentences, words each, beam
# words that are one token each after BPE: 1,000 of them stay within --max-source-tokens (1,024)
HUGE_WORDS = "a man in a blue shirt is playing guitar".split()
# How long a request beside the idle connections may take: before, every one timed out.
IDLE_REQUEST_TIMEOUT_S = 30


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="default: train one under --work-dir")
    parser.add_argument("--data", type=Path, help="its data-bin (with --checkpoint)")
    parser.add_argument("--bpe-codes", type=Path, help="its subword-nmt codes (with --checkpoint)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bahdanau-bench"))
    parser.add_argument("--train-updates", type=int, default=600)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count(), help="OMP_NUM_THREADS of both"
    )
    parser.add_argument(
        "--sentences", type=int, default=1000, help="of test_2016_flickr (1,000 at most)"
    )
    parser.add_argument("--latency-requests", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--small-clients", type=int, default=4)
    parser.add_argument(
        "--small-requests",
        type=int,
        default=20,
        help="each small client sends at least this many (default: %(default)s)",
    )
    parser.add_argument("--large-requests", type=int, default=3)
    parser.add_argument("--large-sentences", type=int, default=64)
    parser.add_argument(
        "--large-words",
        type=int,
        default=25,
        help="test sentences joined until they have this many words (default: %(default)s)",
    )
    parser.add_argument("--large-beam", type=int, default=6)
    parser.add_argument("--idle-connections", type=int, default=1100)
    parser.add_argument(
        "--idle-file-limit",
        type=int,
        default=1024,
        help="the server's file limit, soft and hard, beside them (default: %(default)s)",
    )
    parser.add_argument(
        "--idle-only",
        action="store_true",
        help="measure only the sentence's latency beside idle connections",
    )
    parser.add_argument("--screenshot", type=Path, help="also save a screenshot of the page here")
    parser.add_argument(
        "--screenshot-sentence",
        type=int,
        default=1,
        help="the test sentence typed for it (from 0; default: %(default)s)",
    )
    parser.add_argument(
        "--screenshot-word",
        type=int,
        default=2,
        help="the target word the mouse is on (from 0; default: %(default)s)",
    )
    return parser.parse_args()


def trained_model(args, env):
    """(checkpoint, data-bin, BPE codes): the given ones, or one trained under --work-dir."""
    if args.checkpoint is not None:
        return args.checkpoint, args.data, args.bpe_codes
    data_bin = prepare_multi30k(args.work_dir, env)
    save_dir = args.work_dir / "checkpoints-serve"
    if not (save_dir / "checkpoint_last.pt").exists():
        sizes = Namespace(
            embed=256,
            hidden=256,
            maxout=256,
            batch_size=80,
            warmup=0,
            updates=args.train_updates,
            log_interval=50,
        )
        train("rnnsearch", data_bin, save_dir, sizes, env)
    return save_dir / "checkpoint_last.pt", data_bin, data_bin.parent / "bpe.codes"


def test_sentences(count):
    with gzip.open(MULTI30K / "test_2016_flickr.en.gz", "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines][:count]


def text_options(bpe_codes):
    return [
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--tokenizer",
        "moses",
        "--bpe",
        "subword_nmt",
        "--bpe-codes",
        str(bpe_codes),
        "--cpu",
    ]


def interactive(checkpoint, data_bin, bpe_codes, sentences, beam, env):
    """(sentences/s, peak MiB, translations) of fairseq-interactive, timed from its prompt on."""
    process = subprocess.Popen(
        [
            "fairseq-interactive",
            str(data_bin),
            "--user-dir",
            PLUGIN,
            "--path",
            str(checkpoint),
            "--beam",
            str(beam),
            "--buffer-size",
            "64",
            "--batch-size",
            "64",
            *text_options(bpe_codes),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    for line in process.stdout:
        if READY in line:
            break
    start = time.perf_counter()
    writer = threading.Thread(target=_write_and_close, args=(process.stdin, sentences))
    writer.start()
    translations, last = {}, f"D-{len(sentences) - 1}\t"
    for line in process.stdout:
        if line.startswith("D-"):
            number, _, text = line.rstrip("\n").split("\t", 2)
            translations[int(number[2:])] = text
            if line.startswith(last):
                break
    seconds = time.perf_counter() - start
    process.stdout.read()
    writer.join()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or len(translations) != len(sentences):
        sys.exit(
            f"error: fairseq-interactive failed or translated {len(translations)} of "
            f"{len(sentences)}"
        )
    return (
        len(sentences) / seconds,
        usage.ru_maxrss / 1024,
        [translations[i] for i in range(len(sentences))],
    )


def _write_and_close(stream, sentences):
    stream.write("\n".join(sentences) + "\n")
    stream.close()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(checkpoint, data_bin, bpe_codes, beam, env, log, file_limit=None):
    """bahdanau-serve, under a file limit (soft and hard) when one is given; its URL once ready."""
    port = free_port()
    process = subprocess.Popen(
        [
            "bahdanau-serve",
            str(checkpoint),
            "--data",
            str(data_bin),
            "--beam",
            str(beam),
            "--port",
            str(port),
            *text_options(bpe_codes),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        preexec_fn=None
        if file_limit is None
        else lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (file_limit, file_limit)),
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        if process.poll() is not None:
            sys.exit(f"error: bahdanau-serve exited ({process.returncode}); see {log.name}")
        try:
            httpx.get(url + "/health", timeout=5).raise_for_status()
            return process, url
        except httpx.HTTPError:
            time.sleep(0.5)


async def _clients(url, sentences, clients):
    """Each client sends the next sentence when it has the answer to its last; per-sentence
    (latency, translation), and the wall time of it all."""
    queue = asyncio.Queue()
    for index, sentence in enumerate(sentences):
        queue.put_nowait((index, sentence))
    results = [None] * len(sentences)

    async def client(session):
        while not queue.empty():
            index, sentence = queue.get_nowait()
            sent = time.perf_counter()
            response = await session.post(url + "/translate", json={"text": sentence})
            response.raise_for_status()
            results[index] = (
                time.perf_counter() - sent,
                response.json()["translations"][0]["hypotheses"][0]["translation"],
            )

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=600) as session:
        start = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        return results, time.perf_counter() - start


def large_request(sentences, count, words, beam):
    """count sentences, each consecutive test sentences joined until it has at least words words."""
    joined, current = [], []
    for sentence in itertools.cycle(sentences):
        current.append(sentence)
        if sum(len(part.split()) for part in current) >= words:
            joined.append(" ".join(current))
            current = []
            if len(joined) == count:
                return {"text": joined, "beam": beam}


def huge_request():
    count, words, beam = HUGE
    text = " ".join(itertools.islice(itertools.cycle(HUGE_WORDS), words))
    return {"text": [text] * count, "beam": beam}


async def _beside(url, large, times, small, args):
    """Small requests sent one after another by --small-clients clients, each at least
    --small-requests times and as long as one more client sends the large request times times:
    the small ones' latencies, and each large one's (status, seconds)."""
    large_done = asyncio.Event()
    small_latencies, large_results = [], []

    async def large_client(session):
        for _ in range(times):
            sent = time.perf_counter()
            response = await session.post(url + "/translate", json=large)
            large_results.append((response.status_code, time.perf_counter() - sent))
        large_done.set()

    async def small_client(session):
        for count in itertools.count():
            if large_done.is_set() and count >= args.small_requests:
                return
            sent = time.perf_counter()
            response = await session.post(url + "/translate", json={"text": small})
            response.raise_for_status()
            small_latencies.append(time.perf_counter() - sent)

    limits = httpx.Limits(max_connections=args.small_clients + 1)
    async with httpx.AsyncClient(limits=limits, timeout=600) as session:
        await asyncio.gather(
            large_client(session), *(small_client(session) for _ in range(args.small_clients))
        )
    return small_latencies, large_results


def beside(url, pid, large, times, small, args):
    small_latencies, large_results = asyncio.run(_beside(url, large, times, small, args))
    return dict(
        small=percentiles(small_latencies),
        large=large_results,
        memory=peak_memory_mib(pid),
    )


def percentiles(latencies):
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50": cuts[49], "p95": cuts[94], "p99": cuts[98]}


def peak_memory_mib(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def latency_sentence(sentences):
    """The first of LATENCY_WORDS words: the small request whose latency is measured."""
    return next(sentence for sentence in sentences if len(sentence.split()) == LATENCY_WORDS)


def serve(checkpoint, data_bin, bpe_codes, sentences, args, env, log):
    process, url = start_server(checkpoint, data_bin, bpe_codes, args.beam, env, log)
    try:
        asyncio.run(_clients(url, sentences[: args.clients], args.clients))  # warm-up
        results, seconds = asyncio.run(_clients(url, sentences, args.clients))
        alone = latency_sentence(sentences)
        single, _ = asyncio.run(_clients(url, [alone] * args.latency_requests, 1))
        memory = peak_memory_mib(process.pid)
        large = large_request(sentences, args.large_sentences, args.large_words, args.large_beam)
        beside_large = beside(url, process.pid, large, args.large_requests, alone, args)
        beside_huge = beside(url, process.pid, huge_request(), 1, alone, args)
        if args.screenshot is not None:
            typed = test_sentences(args.screenshot_sentence + 1)[-1]
            screenshot(url, typed, args.screenshot_word, args.screenshot)
    finally:
        process.terminate()
        process.wait()
    latencies = [latency for latency, _ in results]
    return dict(
        sps=len(sentences) / seconds,
        memory=memory,
        translations=[text for _, text in results],
        **percentiles(latencies),
        single=percentiles([latency for latency, _ in single]),
        beside_large=beside_large,
        beside_huge=beside_huge,
    )


def _idle_connections(url, count):
    """count connections that send nothing (the kernel completes them before the server accepts
    them), this process's file limit raised for them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count + 100:
        if hard != resource.RLIM_INFINITY and hard < count + 100:
            sys.exit(
                f"error: {count:,} connections need a file limit over {count + 100:,}: raise it"
            )
        resource.setrlimit(resource.RLIMIT_NOFILE, (count + 100, hard))
    address = urlsplit(url)
    return [socket.create_connection((address.hostname, address.port)) for _ in range(count)]


def _closed_by_the_server(connections):
    """How many of connections the server has closed."""
    poll = select.poll()  # select.select stops at file descriptor 1,023
    for connection in connections:
        poll.register(connection, select.POLLIN)
    by_fd = {connection.fileno(): connection for connection in connections}
    closed = 0
    for fd, _ in poll.poll(0):
        try:
            closed += by_fd[fd].recv(1) == b""
        except ConnectionResetError:
            closed += 1
    return closed


def _one_after_another(url, sentence, count):
    """(latencies, statuses) of count requests, each on a new connection."""
    latencies, statuses = [], collections.Counter()
    for _ in range(count):
        sent = time.perf_counter()
        try:
            response = httpx.post(
                url + "/translate", json={"text": sentence}, timeout=IDLE_REQUEST_TIMEOUT_S
            )
            statuses[response.status_code] += 1
        except httpx.TimeoutException:
            statuses[f"timed out after {IDLE_REQUEST_TIMEOUT_S} s"] += 1
        latencies.append(time.perf_counter() - sent)
    return latencies, statuses


def beside_idle(checkpoint, data_bin, bpe_codes, sentence, args, env):
    """The sentence's latency alone, then beside --idle-connections idle connections, on a server
    under --idle-file-limit; how many of them it closed, its log's size and error lines."""
    log_path = args.work_dir / "serve-idle.log"
    with log_path.open("w") as log:
        process, url = start_server(
            checkpoint, data_bin, bpe_codes, args.beam, env, log, args.idle_file_limit
        )
        try:
            _one_after_another(url, sentence, 1)  # warm-up
            alone, _ = _one_after_another(url, sentence, args.latency_requests)
            crowd = _idle_connections(url, args.idle_connections)
            try:
                beside, statuses = _one_after_another(url, sentence, args.latency_requests)
                closed = _closed_by_the_server(crowd)
            finally:
                for connection in crowd:
                    connection.close()
            memory = peak_memory_mib(process.pid)
        finally:
            process.terminate()
            process.wait()
    output = log_path.read_text(encoding="utf-8", errors="replace")
    return dict(
        alone=percentiles(alone),
        beside=percentiles(beside),
        slowest=max(beside),
        statuses=statuses,
        closed=closed,
        memory=memory,
        log_bytes=log_path.stat().st_size,
        # asyncio's line before, the server's own after
        accept_errors=output.count("socket.accept() out of system resource")
        + output.count("cannot accept a connection"),
        tracebacks=output.count("Traceback"),
    )


def idle_rows(idle, args):
    return [
        f"| a {LATENCY_WORDS}-word sentence alone, one request after another, each on a new "
        f"connection, p50 / p95 (s) | {idle['alone']['p50']:.3f} / {idle['alone']['p95']:.3f} |",
        f"| the same while {args.idle_connections:,} idle connections are open, the server at "
        f"`ulimit -n {args.idle_file_limit}`: p50 / p95 / slowest (s) | "
        f"{idle['beside']['p50']:.3f} / {idle['beside']['p95']:.3f} / {idle['slowest']:.3f} |",
        "| their statuses | "
        + ", ".join(f"{status}: {count}" for status, count in idle["statuses"].items())
        + " |",
        f"| idle connections the server had closed by then | {idle['closed']:,} |",
        f"| the server's log: bytes; accept errors; tracebacks | {idle['log_bytes']:,}; "
        f"{idle['accept_errors']:,}; {idle['tracebacks']:,} |",
        f"| peak memory of bahdanau-serve (MiB) | {idle['memory']:,.0f} |",
    ]


def screenshot(url, sentence, word, path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from bench.browser import headless_chromium, type_and_wait_for_translation

    with headless_chromium(width=1000, height=1060) as driver:
        type_and_wait_for_translation(driver, url + "/", sentence)
        ActionChains(driver).move_to_element(
            driver.find_elements(By.CSS_SELECTOR, "#heatmap th.target-word")[word]
        ).perform()
        path.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(path))


def machine(threads):
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.+)", lscpu).group(1).strip()
    avx512 = "with AVX-512" if "avx512f" in lscpu else "without AVX-512"
    return (
        f"{model} {avx512}, {os.cpu_count()} cores, torch {torch.__version__}, {threads} threads "
        "(OMP_NUM_THREADS)"
    )


def report(runs, idle, args, sentences, identical):
    def median(side, key):
        return statistics.median(run[side][key] for run in runs)

    ratio = median("server", "sps") / median("interactive", "sps")
    return "\n".join(
        [
            f"| measure (median of {len(runs)}) | value |",
            "|---|---|",
            "| fairseq-interactive --buffer-size 64 --batch-size 64, sentences/s | "
            f"{median('interactive', 'sps'):.1f} |",
            f"| bahdanau-serve, {args.clients} concurrent clients, sentences/s | "
            f"{median('server', 'sps'):.1f} |",
            f"| ratio bahdanau-serve / fairseq-interactive | {ratio:.2f} |",
            f"| latency under {args.clients} clients, p50 / p95 / p99 (s) | "
            f"{median('server', 'p50'):.3f} / {median('server', 'p95'):.3f} / "
            f"{median('server', 'p99'):.3f} |",
            f"| latency of one {LATENCY_WORDS}-word sentence alone, p50 / p95 / p99 (s) | "
            + " / ".join(
                f"{statistics.median(run['server']['single'][key] for run in runs):.3f}"
                for key in ("p50", "p95", "p99")
            )
            + " |",
            "| peak memory, fairseq-interactive / bahdanau-serve (MiB) | "
            f"{median('interactive', 'memory'):,.0f} / {median('server', 'memory'):,.0f} |",
            *beside_rows(runs, args),
            *idle_rows(idle, args),
            f"| translations identical to fairseq-interactive's | {identical:,} of "
            f"{len(sentences):,} |",
            "",
            f"- Machine: {machine(args.threads)}.",
            f"- Input: the first {len(sentences):,} sentences of test_2016_flickr, beam "
            f"{args.beam}, Moses tokenizer and subword-nmt BPE on both sides.",
            "- Every run (interactive / server sentences/s): "
            + ", ".join(
                f"{run['interactive']['sps']:.1f} / {run['server']['sps']:.1f}" for run in runs
            )
            + ".",
            f"- Command: `{' '.join(['python -m bench.serve', *sys.argv[1:]])}`",
        ]
    )


def beside_rows(runs, args):
    """The small requests beside a large one, and beside the huge one, from the last run."""
    rows = []
    count, words, beam = HUGE
    for key, what in (
        (
            "beside_large",
            f"{args.large_sentences} sentences of {args.large_words}+ words at beam "
            f"{args.large_beam}, sent {args.large_requests} times",
        ),
        ("beside_huge", f"{count} sentences of {words:,} words at beam {beam}, sent once"),
    ):
        scenario = runs[-1]["server"][key]
        rows += [
            f"| {args.small_clients} clients' {LATENCY_WORDS}-word sentences beside {what}: "
            f"p50 / p99 (s) | {scenario['small']['p50']:.3f} / {scenario['small']['p99']:.3f} |",
            "| that request: status, seconds each | "
            + ", ".join(f"{status} in {seconds:.2f}" for status, seconds in scenario["large"])
            + " |",
            f"| peak memory of bahdanau-serve after it (MiB) | {scenario['memory']:,.0f} |",
        ]
    return rows


def main():
    args = arguments()
    for library in (
        "httpx",
        "httpcore",
    ):  # importing fairseq sets the root logger to DEBUG: not a line per request
        logging.getLogger(library).setLevel(logging.WARNING)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "OMP_NUM_THREADS": str(args.threads),
    }
    checkpoint, data_bin, bpe_codes = trained_model(args, env)
    sentences = test_sentences(args.sentences)
    alone = latency_sentence(sentences)
    if args.idle_only:
        idle = beside_idle(checkpoint, data_bin, bpe_codes, alone, args, env)
        print("\n".join(["| measure | value |", "|---|---|", *idle_rows(idle, args)]))
        print(f"- Command: `{' '.join(['python -m bench.serve', *sys.argv[1:]])}`")
        return
    runs = []
    with (args.work_dir / "serve.log").open("w") as log:
        for repeat in range(args.repeats):
            sps, memory, translations = interactive(
                checkpoint, data_bin, bpe_codes, sentences, args.beam, env
            )
            runs.append(
                {
                    "interactive": dict(sps=sps, memory=memory, translations=translations),
                    "server": serve(checkpoint, data_bin, bpe_codes, sentences, args, env, log),
                }
            )
            print(
                f"repeat {repeat + 1}: interactive {sps:.1f} sentences/s, server "
                f"{runs[-1]['server']['sps']:.1f} sentences/s",
                flush=True,
            )
    idle = beside_idle(checkpoint, data_bin, bpe_codes, alone, args, env)
    identical = sum(
        ours == theirs
        for ours, theirs in zip(
            runs[-1]["server"]["translations"], runs[-1]["interactive"]["translations"]
        )
    )
    print(report(runs, idle, args, sentences, identical))


if __name__ == "__main__":
    main()
