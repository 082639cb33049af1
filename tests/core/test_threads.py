"""sojourn.core.runs.threads: replications side by side in threads, in order, the serial loop's results."""
import threading

import pytest

from sojourn.core.runs.threads import available_cores, ordered_map, threads_for


def test_threads_for_caps_at_tasks_and_cores():
    assert threads_for(1, None) == 1
    assert threads_for(10, None) == min(10, available_cores())
    assert threads_for(10, 0) == threads_for(10, 1) == 1
    assert threads_for(3, 8) == 3 and threads_for(8, 3) == 3


def test_ordered_map_keeps_the_order_and_uses_the_threads():
    seen = set()

    def fn(x):
        seen.add(threading.current_thread().name)
        return x * x

    assert ordered_map(fn, range(20), "items", 3) == [x * x for x in range(20)]
    assert any(name.startswith("sojourn-replication") for name in seen)
    seen.clear()
    assert ordered_map(fn, range(5), "items", 1) == [x * x for x in range(5)]
    assert seen == {threading.current_thread().name}  # one worker: the calling thread alone


def test_ordered_map_raises_the_first_error_in_order():
    def fn(x):
        if x in (3, 7):
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 3"):
        ordered_map(fn, range(10), "items", 4)
