"""The parallel map keeps the input order, reads only a bounded number of items ahead, and ends
its workers however soon it ends."""

from bahdanau_tools.data.parallel import chunked, ordered_map

from ...support.paths import REPO
from ...support.tools import fairseq_env, python_program


def square(number):
    return number * number


def test_ordered_map_gives_the_results_in_input_order():
    assert list(ordered_map(square, range(50), workers=2)) == [n * n for n in range(50)]


def test_ordered_map_reads_at_most_two_items_per_worker_ahead():
    read = []

    def items():
        for number in range(1000):
            read.append(number)
            yield number

    results = ordered_map(square, items(), workers=2)
    assert next(results) == 0
    assert len(read) <= 2 * 2
    results.close()


def test_ordered_map_with_one_worker_stays_in_this_process():
    assert list(ordered_map(lambda n: -n, range(3), workers=1)) == [0, -1, -2]


def test_chunked_cuts_a_stream_into_lists_of_the_given_size():
    assert list(chunked(iter(range(5)), 2)) == [[0, 1], [2, 3], [4]]


# A worker that the pool ends before it first ran: this program holds the second worker stopped
# from the moment it is forked, until a second after (on one CPU, so that it cannot run before
# it is stopped), while one item is mapped and the pool ends. The pool's SIGTERM comes to the
# worker before Python in it has set itself up after the fork, which drops the signals that came
# meanwhile: a worker that had SIGTERM's handler of bahdanau-prepare-data lived on, waiting for a
# task, and the pool's end waited for it forever (it hung the command in its summary's many small
# pools on a busy machine).
ENDED_BEFORE_IT_RAN = """
import os, signal, sys, threading, time
from bahdanau_tools.data.command_line import stop_as_on_ctrl_c
from bahdanau_tools.data.parallel import ordered_map

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
signal.signal(signal.SIGTERM, stop_as_on_ctrl_c)
fork, forked = os.fork, []


def fork_and_hold_the_second():
    pid = fork()
    if pid:
        forked.append(pid)
        if len(forked) == 2:
            os.kill(pid, signal.SIGSTOP)
            threading.Timer(1.0, os.kill, (pid, signal.SIGCONT)).start()
    return pid


def give_up():
    time.sleep(30)
    os.kill(forked[1], signal.SIGKILL)  # not to be left behind, holding this program's stdout
    print("the pool's end waited for a worker that its SIGTERM did not end", file=sys.stderr)
    os._exit(1)


os.fork = fork_and_hold_the_second
threading.Thread(target=give_up, daemon=True).start()
print(list(ordered_map(abs, [-1], workers=2)))
"""


def test_a_worker_that_the_pool_ends_before_it_ran_ends():
    completed = python_program(ENDED_BEFORE_IT_RAN, env=fairseq_env(), cwd=REPO, timeout=120)
    assert completed.stdout == "[1]\n"


# A worker killed while it maps an item, as the kernel kills the largest process when memory runs
# out: the pool starts another in its place, but the item is lost, and waiting for its result
# waited forever.
KILLED_WHILE_IT_WORKED = """
import os, signal
from bahdanau_tools.data.parallel import ordered_map
from bahdanau_tools.errors import DataError


def killed_at_three(number):
    if number == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return number


try:
    list(ordered_map(killed_at_three, range(10), workers=2))
except DataError as error:
    print(error)
"""


def test_a_worker_killed_while_it_works_ends_the_map_in_one_line_that_names_the_signal():
    completed = python_program(KILLED_WHILE_IT_WORKED, env=fairseq_env(), cwd=REPO, timeout=60)
    assert completed.stdout.startswith("a worker process was killed by SIGKILL")
    assert completed.stdout.count("\n") == 1
