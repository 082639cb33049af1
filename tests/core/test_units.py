"""sojourn.core.checks.units: times and rates as people write them, and back."""
from __future__ import annotations

import math

import pytest

from sojourn.core.checks.units import format_time, in_unit, parse_rate, parse_time, readable_unit, time_unit


@pytest.mark.parametrize("text, seconds, unit", [
    ("72ms", 0.072, "ms"), ("72 ms", 0.072, "ms"), ("0.1s", 0.1, "s"), ("1.5 sec", 1.5, "s"), ("2 seconds", 2.0, "s"),
    ("250us", 250e-6, "µs"), ("250µs", 250e-6, "µs"), ("250μs", 250e-6, "µs"), ("3ns", 3e-9, "ns"),
    ("1e-3 s", 1e-3, "s"), ("2E-3s", 2e-3, "s"), ("1_000us", 1e-3, "µs"), (".5ms", 5e-4, "ms"), ("12 MS", 0.012, "ms"),
])
def test_times_parse_to_seconds_and_remember_their_unit(text, seconds, unit):
    q = parse_time(text, "--deadline")
    assert q.si == pytest.approx(seconds, rel=1e-12) and q.unit == unit and q.text == text.strip()


@pytest.mark.parametrize("text, per_second, unit", [
    ("9000/s", 9000.0, "/s"), ("9/ms", 9000.0, "/ms"), ("9000 per s", 9000.0, "/s"), ("9000 per second", 9000.0, "/s"),
    ("9000Hz", 9000.0, "/s"), ("9 /ms", 9000.0, "/ms"), ("1e4/s", 1e4, "/s"), ("0.5/us", 5e5, "/µs"),
    ("2/ns", 2e9, "/ns"),
])
def test_rates_parse_to_per_second(text, per_second, unit):
    q = parse_rate(text, "--arrival-rate")
    assert q.si == pytest.approx(per_second, rel=1e-12) and q.unit == unit


def test_numbers_are_si_in_the_api_but_text_needs_a_unit():
    assert parse_time(0.072, "deadline").si == 0.072 and parse_time(0.072, "deadline").unit == "s"
    assert parse_rate(9000, "arrival_rate").si == 9000.0
    with pytest.raises(ValueError, match=r"--deadline needs a time unit .*'72ms'"):
        parse_time("72", "--deadline")
    with pytest.raises(ValueError, match=r"--arrival-rate needs a unit, e.g. '9000/s'"):
        parse_rate("9000", "--arrival-rate")


@pytest.mark.parametrize("bad, match", [
    ("72 mss", r"--deadline: unknown time unit 'mss'.*did you mean 'ms'"), ("-1ms", r"--deadline must be > 0"),
    ("0ms", r"--deadline must be > 0"), ("inf ms", r"--deadline must be a number with a time unit"),
    ("nan ms", r"--deadline must be a number with a time unit"), ("abc", r"--deadline must be a number"),
    ("", r"--deadline must be a number"), (True, r"--deadline must be a duration"), (None, r"--deadline must be"),
    (-0.5, r"--deadline must be > 0"), (float("nan"), r"--deadline must be > 0"), ("5 hours", "unknown time unit"),
])
def test_bad_times_name_the_field(bad, match):
    with pytest.raises(ValueError, match=match):
        parse_time(bad, "--deadline")


@pytest.mark.parametrize("bad, match", [
    ("9000/x", r"--arrival-rate: unknown time unit 'x'"), ("0/s", r"must be > 0"), ("-3/s", r"must be > 0"),
    ("9000/s/s", r"must be a number per time unit"), ("9000 per", r"must be a number per time unit"),
    (0, r"must be > 0"), (float("inf"), r"must be > 0"), ("9e999/s", r"must be a finite number"),
])
def test_bad_rates_name_the_field(bad, match):
    with pytest.raises(ValueError, match=match):
        parse_rate(bad, "--arrival-rate")


def test_zero_time_only_where_allowed():
    assert parse_time("0ms", "--network-latency", allow_zero=True).si == 0.0


def test_printing_in_a_unit_and_round_trip():
    assert format_time(0.0713, "ms") == "71.3 ms"
    assert format_time(0.072, "ms") == "72 ms"  # 0.072 is not exactly 72e-3: printing absorbs it
    assert format_time(250e-6, "us") == "250 µs" and format_time(1.5) == "1.5 s" and format_time(3e-8) == "30 ns"
    assert format_time(float("inf"), "ms") == "inf ms" and format_time(float("nan"), "ms") == "n/a"
    assert readable_unit(0.072) == "ms" and readable_unit(2e-4) == "µs" and readable_unit(12.0) == "s"
    assert time_unit("μs") == time_unit("us") == "µs"
    for x in (1e-9, 3.7e-7, 0.0123, 1.0, 42.0):
        for unit in ("s", "ms", "µs", "ns"):
            text = f"{in_unit(x, unit)!r}{unit}"
            assert math.isclose(parse_time(text).si, x, rel_tol=1e-12)
