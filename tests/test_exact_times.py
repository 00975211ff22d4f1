"""The lane replay's times are whole picoseconds, exact over the whole horizon (10^6 s),
not only below 2^53 ps (2.5 hours) where float64 holds every whole number."""

import pytest

from simnet import topology_from_dict
from simnet.engine.clock import HORIZON_PS, BeyondHorizon
from simnet.engine.lanes import INT64_SAFE
from simnet.run.simulate import simulate


def _mesh(gpus: int):
    # 1 kb/s = 125 B/s: a byte takes 8 * 10^9 ps; links of 3 ps (an odd number, so sums past 2^53 are odd)
    return topology_from_dict({"name": "slow", "generate": {"kind": "full_mesh", "gpus": gpus,
                                                            "bandwidth": "1 kb/s", "latency": "0.003 ns"}})


def test_a_ring_past_two_to_the_53_picoseconds_ends_on_the_exact_picosecond():
    # 2 GPUs, 1,200,000 B: each sends a 600,000 B half twice (reduce-scatter, all-gather),
    # 600,000 B / 125 B/s = 4,800 s = 4.8 * 10^15 ps each, plus 3 ps on the link:
    # 2 * (4.8 * 10^15 + 3) = 9,600,000,000,000,006 ps (2.7 hours). Float64 sums gave
    # ...008: the second half leaves at 9.6 * 10^15 + 3, which float64 (steps of 2 there) rounds
    result = simulate(_mesh(2), "ring", 1_200_000, model="ideal")
    assert result.replay.engine == "lanes"
    assert result.replay.duration_ps == 9_600_000_000_000_006 > 2**53
    assert result.replay.lanes_done_ps.tolist() == [9_600_000_000_000_006] * 2


def test_the_lanes_with_a_reduction_each_step_are_exact_too():
    # the same ring with reductions at 1 MB/s (the replay's general path): the all-gather
    # half waits for the reduced half, 600,000 B / 10^6 B/s = 0.6 s = 6 * 10^11 ps later
    result = simulate(_mesh(2), "ring", 1_200_000, model="ideal", reduce_bandwidth=1e6)
    assert result.replay.engine == "lanes"
    assert result.replay.duration_ps == 2 * (48 * 10**14 + 3) + 6 * 10**11 == 9_600_600_000_000_006


def test_lanes_whose_work_together_could_overflow_int64_are_checked_as_they_go_and_stay_exact():
    # 10 GPUs, 40,000,000 B: 18 steps of a 4,000,000 B part, 3.2 * 10^16 ps each plus 3 ps:
    # 18 * (3.2 * 10^16 + 3) = 576,000,000,000,000,054 ps (6.7 days, inside the horizon), but the
    # ten lanes' work together, 5.76 * 10^18 ps, passes INT64_SAFE: the passes check as they go
    assert 10 * 18 * 32 * 10**15 > INT64_SAFE
    result = simulate(_mesh(10), "ring", 40_000_000, model="ideal")
    assert result.replay.engine == "lanes"
    assert result.replay.duration_ps == 18 * (32 * 10**15 + 3) == 576_000_000_000_000_054 < HORIZON_PS


def test_a_ring_that_would_overflow_int64_stops_at_the_horizon():
    # 2^31 B at 125 B/s: 2^30 B * 8 * 10^9 ps per half, 1.7 * 10^19 ps for the ring: past the
    # horizon (10^18 ps) and past int64 (9.2 * 10^18): the one-line horizon error, not a wrapped time
    with pytest.raises(BeyondHorizon, match="passes 1,000,000 s"):
        simulate(_mesh(2), "ring", 2**31, model="ideal")
