"""The parallel map keeps the input order and reads only a bounded number of items ahead."""

from bahdanau_tools.data.parallel import chunked, ordered_map


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
