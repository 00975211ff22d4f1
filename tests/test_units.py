from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simnet import units


@pytest.mark.parametrize("text, expected", [
    ("400 Gb/s", 50e9), ("50 GB/s", 50e9), ("400 Gbps", 50e9), ("50 GBps", 50e9),
    ("8000 b/s", 1000.0), ("1000 bps", 125.0), ("100 Mb/s", 12.5e6), ("1 Tb/s", 125e9),
    ("1 KiB/s", 1024.0), ("1 GiB/s", 2.0**30), ("2.5 MB/s", 2.5e6), ("1e3 B/s", 1e3),
])
def test_bandwidth_bits_versus_bytes(text, expected):
    assert units.parse_bandwidth(text) == pytest.approx(expected, rel=1e-15)


def test_400_gbps_equals_50_gbytes_per_second():
    assert units.parse_bandwidth("400 Gb/s") == units.parse_bandwidth("50 GB/s")


@pytest.mark.parametrize("text, expected", [
    ("1.5 us", 1.5e-6), ("1.5 µs", 1.5e-6), ("20 ms", 0.02), ("3 ns", 3e-9), ("2 s", 2.0), ("0 s", 0.0),
])
def test_time(text, expected):
    assert units.parse_time(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("text, expected", [
    ("1 GiB", 2**30), ("1 GB", 10**9), ("64 MiB", 64 * 2**20), ("8 B", 8), ("1.5 KiB", 1536), ("2 TiB", 2**41),
])
def test_size(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("seconds, shown", [
    (2.2e-3, "2.200 ms"), (3.98e-3, "3.980 ms"), (5.2314e-3, "5.231 ms"), (215e-6, "215.0 us"), (0.99996e-3, "1.000 ms"),
    (0.0452, "45.20 ms"), (12345.6, "12350 s"), (0.0, "0 ns"), (1e-15, "0 ns"), (1e-12, "1.000 ps"), (5e-10, "500.0 ps"),
])
def test_times_show_four_significant_digits_in_every_table(seconds, shown):
    # a column read "2.2 ms" beside "5.231 ms": the same precision must look the same
    assert units.format_time(seconds) == shown


def test_a_typed_time_is_shown_as_typed_on_request():
    assert units.format_time(0.180, short=True) == "180 ms" and units.format_time(1e-6, short=True) == "1 us"


@pytest.mark.parametrize("nbytes, shown", [
    (1960448 * 2**10, "1.870 GiB"), (10241 * 2**10, "10.00 MiB"), (123456 * 10**3, "123.5 MB"),
    (1025 * 2**10, "1025 KiB"), (1_400_000_000, "1.4 GB"), (2**50 - 1, "1.000 PiB"), (12345, "12.06 KiB"),
])
def test_sizes_are_exact_in_four_digits_or_rounded_to_four(nbytes, shown):
    # "1960448 KiB" was exact but unreadable
    assert units.format_size(nbytes) == shown


@pytest.mark.parametrize("bad", ["400", 400, 4.5, "40 Gbq", "fast", "", "GB/s", None, True, "1 GB"])
def test_bandwidth_refuses_bare_numbers_and_unknown_units(bad):
    with pytest.raises(units.UnitError):
        units.parse_bandwidth(bad)


def test_messages_say_what_was_expected():
    with pytest.raises(units.UnitError, match=r"'40 Gbq' is not a bandwidth \(e.g. '400 Gb/s', '50 GB/s'\)"):
        units.parse_bandwidth("40 Gbq")
    with pytest.raises(units.UnitError, match="has no unit"):
        units.parse_time(5)


def test_size_must_be_whole_bytes():
    with pytest.raises(units.UnitError, match="whole number"):
        units.parse_size("1.5 B")


@given(st.floats(min_value=units.BANDWIDTH_RANGE[0] * 1.001, max_value=units.BANDWIDTH_RANGE[1] * 0.999))
def test_bandwidth_format_parse_round_trip(value):
    assert units.parse_bandwidth(units.format_bandwidth(value)) == pytest.approx(value, rel=5e-4)


@given(st.floats(min_value=units.TIME_RANGE[0] * 1.001, max_value=units.TIME_RANGE[1] * 0.999))
def test_time_format_parse_round_trip(value):
    assert units.parse_time(units.format_time(value)) == pytest.approx(value, rel=5e-4)


@given(st.integers(min_value=0, max_value=units.SIZE_MAX))
def test_size_format_parse_round_trip(value):
    # up to the largest size simnet takes: 1 PiB printed once rounded to "1126 TB", which
    # is above 1 PiB, and the table of a run that had finished could not be shown
    text = units.format_size(value)
    assert units.parse_size_approx(text) == pytest.approx(value, rel=5e-4, abs=0.5)


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["B", "KB", "MB", "GB", "KiB", "MiB", "GiB"]))
def test_sizes_come_back_in_the_unit_system_they_were_typed_in(number, unit):
    typed = f"{number} {unit}"
    nbytes = units.parse_size(typed)
    shown = units.format_size(nbytes)
    assert units.parse_size_approx(shown) == pytest.approx(nbytes, rel=5e-4)
    other = 1000 if unit.endswith("iB") else 1024  # 375 KiB is also exactly 384 KB: either is right
    if nbytes % other and number % 1000 and number % 1024 and unit != "B":
        assert shown.endswith("iB") == unit.endswith("iB"), (typed, shown)


@given(st.integers(min_value=0, max_value=50))
def test_power_of_two_sizes_format_exactly(exponent):
    value = 2**exponent
    assert units.parse_size(units.format_size(value)) == value


_ANY_NUMBER = st.one_of(st.floats(), st.integers(min_value=-10**400, max_value=10**400).map(str),
                        st.sampled_from(["1e400", "-1e400", "1e-400", "inf", "nan", "1e309", "4.9e-324"]))


_IN_RANGE = {  # parser -> (units to try, what any value it returns must satisfy)
    "bandwidth": (["b/s", "Tb/s", "B/s", "TB/s", "GiB/s"],
                  lambda v: v <= 0 or units.BANDWIDTH_RANGE[0] <= v <= units.BANDWIDTH_RANGE[1]),
    "time": (["ns", "us", "ms", "s"], lambda v: v == 0 or units.TIME_RANGE[0] <= abs(v) <= units.TIME_RANGE[1]),
    "size": (["B", "KB", "GiB", "TB", "TiB"], lambda v: isinstance(v, int) and abs(v) <= units.SIZE_MAX),
}


@pytest.mark.parametrize("quantity", sorted(_IN_RANGE))
@given(number=_ANY_NUMBER, pick=st.integers(min_value=0, max_value=4))
def test_any_quantity_is_in_range_or_refused(quantity, number, pick):
    """Whatever number and unit: a parsed value is finite and within the quantity's range
    (positive bandwidths, non-zero times, sizes); anything else is a UnitError."""
    unit_names, in_range = _IN_RANGE[quantity]
    try:
        value = getattr(units, f"parse_{quantity}")(f"{number} {unit_names[pick % len(unit_names)]}")
    except units.UnitError:
        return
    assert in_range(value), value


@pytest.mark.parametrize("text", ["64", " 1.5 ", "1e3"])
def test_a_number_typed_as_text_is_said_to_lack_its_unit(text):
    """Fuzz finding (31d): `run -s 64` said "'64' is not a size", where `sizes: [64]` in a
    file says the unit is missing: a number typed on the command line is text."""
    with pytest.raises(ValueError, match="has no unit; a size needs one"):
        units.parse_size(text)


TIME_UNITS = {"ps": 0, "ns": 3, "us": 6, "ms": 9, "s": 12}  # powers of ten of a picosecond
RATE_UNITS = {"b/s": 0, "Kb/s": 3, "Mb/s": 6, "Gb/s": 9, "Tb/s": 12}  # of a bit per second


@given(st.integers(min_value=1, max_value=86_400 * 10**12), st.sampled_from(list(TIME_UNITS)),
       st.sampled_from(list(TIME_UNITS)))
def test_every_spelling_of_one_time_is_the_same_number(picoseconds, one, other):
    """Fuzz round as, M1: ``1000 ns`` was 1.0000000000000002e-06 s and ``1 us`` 1e-06 s, and
    routing told equal-cost links apart by that last bit (a ring 8.476 or 5.657 ms). A number
    and its unit are multiplied exactly and rounded once, so every spelling of one time is
    one float."""
    def spelt(unit: str) -> str:
        return f"{Decimal(picoseconds).scaleb(-TIME_UNITS[unit]):f} {unit}"

    assert units.parse_time(spelt(one)) == units.parse_time(spelt(other))


@given(st.integers(min_value=1000, max_value=10**16), st.sampled_from(list(RATE_UNITS)),
       st.sampled_from(list(RATE_UNITS)))
def test_every_spelling_of_one_bandwidth_is_the_same_number(bits, one, other):
    """Bits per second in any decimal prefix, or bytes per second, are one float."""
    def spelt(unit: str) -> str:
        return f"{Decimal(bits).scaleb(-RATE_UNITS[unit]):f} {unit}"

    assert units.parse_bandwidth(spelt(one)) == units.parse_bandwidth(spelt(other)) == \
        units.parse_bandwidth(f"{Decimal(bits) / 8:f} B/s")


@pytest.mark.parametrize("parse, text", [(units.parse_size, "1e1000000 B"), (units.parse_size, "1e99999999999999999999 B"),
                                         (units.parse_time, "1e1000000 s"), (units.parse_bandwidth, "1e-999999999 Gb/s"),
                                         (units.parse_time, "1e-1000000 us"), (units.parse_time, "1e-99999999999999999999 us")])
def test_an_exponent_beyond_any_number_is_out_of_range_in_one_line(parse, text):
    """Review 77, H4: multiplied as decimals in the process's decimal context, 1e1000000 B
    raised decimal.Overflow (a traceback) where a float's infinity had been refused as out of
    range. simnet multiplies in a context of its own, whatever the caller's."""
    import decimal

    with decimal.localcontext(decimal.Context(prec=3, traps=[decimal.Inexact])):  # a caller's, which counts for nothing
        with pytest.raises(units.UnitError, match="is outside"):
            parse(text)
        assert units.parse_time("0.123456789 s") == 0.123456789 and units.parse_size("0e99999999999999999999 B") == 0
