"""The fluid network's semantics (docs/architecture.md): closed forms, max-min fairness, invariants."""

from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simnet import topology_from_dict
from simnet.engine.fluid import FluidNetwork
from simnet.engine.maxmin import max_min_rates
from simnet.topology.graph import PS_PER_SECOND


def chain(bandwidths: list[str], latency: str = "1 us"):
    """gpu0 - s0 - s1 - ... - gpuN: a line of links with the given bandwidths."""
    k = len(bandwidths)
    names = ["a"] + [f"s{i}" for i in range(k - 1)] + ["b"]
    nodes = [{"id": n, "kind": "gpu" if n in ("a", "b") else "switch"} for n in names]
    links = [{"a": u, "b": v, "bandwidth": bw, "latency": latency} for u, v, bw in zip(names, names[1:], bandwidths)]
    return topology_from_dict({"name": "chain", "nodes": nodes, "links": links})


def star(n: int, bandwidth: str = "1 GB/s", latency: str = "1 us"):
    return topology_from_dict({"name": "star", "generate": {"kind": "ps_star", "workers": n,
                                                            "worker_bandwidth": bandwidth, "ps_bandwidth": bandwidth,
                                                            "latency": latency}})


def run(topo, transfers, **kwargs):
    """Start (src, dst, nbytes[, at_seconds]) transfers; return delivery times in seconds."""
    env = simpy.Environment()
    net = FluidNetwork(env, topo, **kwargs)
    events = []

    def later(src, dst, nbytes, at, slot):
        yield env.timeout(round(at * PS_PER_SECOND))
        events[slot] = net.transfer(src, dst, nbytes)

    for i, (src, dst, nbytes, *at) in enumerate(transfers):
        if at and at[0] > 0:
            events.append(None)
            env.process(later(src, dst, nbytes, at[0], i))
        else:
            events.append(net.transfer(src, dst, nbytes))
    env.run()
    return [e.value for e in events], net


def test_one_flow_takes_latency_plus_size_over_bottleneck():
    topo = chain(["10 GB/s", "2 GB/s", "10 GB/s"], latency="1.5 us")
    (t,), _ = run(topo, [("a", "b", 1e9)])
    assert t == pytest.approx(3 * 1.5e-6 + 1e9 / 2e9, rel=1e-12)


def test_two_flows_on_one_link_get_half_each():
    topo = star(3)
    times, _ = run(topo, [("worker0", "worker2", 1e9), ("worker1", "worker2", 1e9)])
    assert times == pytest.approx([2.0 + 2e-6] * 2, rel=1e-12)


def test_parking_lot_max_min():
    # long flow a->b over links of 1 and 2 GB/s; a cross flow on each link.
    nodes = [{"id": n, "kind": "gpu"} for n in ("a", "b", "c1", "d1", "c2", "d2")] + \
            [{"id": n, "kind": "switch"} for n in ("s1", "s2", "s3")]
    link = lambda u, v, bw: {"a": u, "b": v, "bandwidth": bw, "latency": "0 s"}  # noqa: E731
    links = [link("a", "s1", "100 GB/s"), link("s1", "s2", "1 GB/s"), link("s2", "s3", "2 GB/s"),
             link("s3", "b", "100 GB/s"), link("c1", "s1", "100 GB/s"), link("s2", "d1", "100 GB/s"),
             link("c2", "s2", "100 GB/s"), link("s3", "d2", "100 GB/s")]
    topo = topology_from_dict({"name": "parking", "nodes": nodes, "links": links})
    # rates: long 0.5, cross-1 0.5 (share the 1 GB/s link), cross-2 gets the rest of 2: 1.5 GB/s
    times, _ = run(topo, [("a", "b", 0.5e9), ("c1", "d1", 0.5e9), ("c2", "d2", 1.5e9)])
    assert times == pytest.approx([1.0, 1.0, 1.0], rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_incast_takes_n_times_s_over_b(n):
    topo = star(n + 1)
    times, net = run(topo, [(f"worker{i}", f"worker{n}", 1e8) for i in range(n)])
    assert max(times) == pytest.approx(n * 1e8 / 1e9 + 2e-6, rel=1e-9)
    sink = topo.link_index[("switch", f"worker{n}")]
    assert net.stats.max_flows[sink] == n
    assert net.stats.saturated_ps[sink] == pytest.approx(n * 0.1 * PS_PER_SECOND, rel=1e-9)


def test_latency_is_added_once_per_path_not_per_byte_or_hop_chunk():
    topo = chain(["1 GB/s"] * 4, latency="10 us")
    (t,), _ = run(topo, [("a", "b", 1e6)])
    assert t == pytest.approx(4 * 10e-6 + 1e6 / 1e9, rel=1e-12)


def test_message_overhead_is_added_to_delivery():
    (t,), _ = run(chain(["1 GB/s"]), [("a", "b", 1e6)], message_overhead=5e-6)
    assert t == pytest.approx(1e-6 + 1e-3 + 5e-6, rel=1e-12)


def test_late_flow_takes_its_share_from_then_on():
    topo = star(3)
    times, net = run(topo, [("worker0", "worker2", 1e9), ("worker1", "worker2", 1e9, 0.5)])
    # first alone for 0.5 s (0.5 GB), then both at 0.5 GB/s: first done at 1.5 s, second at 2.0 s
    assert times == pytest.approx([1.5 + 2e-6, 2.0 + 2e-6], rel=1e-9)
    sink = topo.link_index[("switch", "worker2")]
    assert net.stats.bytes[sink] == pytest.approx(2e9, rel=1e-9)


def test_zero_bytes_and_self_transfers_arrive_after_latency_only():
    topo = star(2)
    times, _ = run(topo, [("worker0", "worker1", 0), ("worker0", "worker0", 1e9)])
    assert times == pytest.approx([2e-6, 0.0], abs=1e-15)


def test_recomputes_once_per_instant():
    topo = star(9)
    env = simpy.Environment()
    net = FluidNetwork(env, topo, timeline=True)
    for i in range(8):
        net.transfer(f"worker{i}", "worker8", 1e6 * (1 + i % 2))
    env.run()
    times = [t for t, _, _ in net.stats.timeline]
    assert times == sorted(set(times))  # strictly increasing: one allocation per instant
    assert len(times) == 3  # start, the small ones finish together, the big ones finish


# ---------------------------------------------------------------- max-min properties

def reference_water_filling(paths: list[list[int]], capacity: list[float]) -> list[Fraction]:
    """Textbook progressive filling in exact rational arithmetic, one flow at a time."""
    cap = [Fraction(c) for c in capacity]
    rate = [Fraction(0)] * len(paths)
    frozen = [not p for p in paths]
    while not all(frozen):
        best = None
        for link, c in enumerate(cap):
            users = [f for f, p in enumerate(paths) if link in p and not frozen[f]]
            if users:
                used = sum(rate[f] for f, p in enumerate(paths) if link in p)
                share = (c - used) / len(users)
                best = share if best is None or share < best else best
        for f in range(len(paths)):
            if not frozen[f]:
                rate[f] += best
        for link, c in enumerate(cap):
            if sum(rate[f] for f, p in enumerate(paths) if link in p) >= c:
                for f, p in enumerate(paths):
                    if link in p:
                        frozen[f] = True
    return rate


@st.composite
def flow_sets(draw):
    links = draw(st.integers(1, 8))
    capacity = draw(st.lists(st.integers(1, 100), min_size=links, max_size=links))
    flows = draw(st.integers(1, 10))
    paths = [draw(st.lists(st.integers(0, links - 1), min_size=1, max_size=min(4, links), unique=True))
             for _ in range(flows)]
    return paths, capacity


def _padded(paths, links):
    width = max(len(p) for p in paths)
    return np.array([p + [links] * (width - len(p)) for p in paths])


@settings(max_examples=150, deadline=None)
@given(flow_sets())
def test_fast_solver_matches_reference(case):
    paths, capacity = case
    fast = max_min_rates(_padded(paths, len(capacity)), np.array(capacity + [np.inf], dtype=float))
    slow = reference_water_filling(paths, capacity)
    assert fast == pytest.approx([float(r) for r in slow], rel=1e-9)


@settings(max_examples=150, deadline=None)
@given(flow_sets())
def test_allocation_is_feasible_and_max_min_optimal(case):
    paths, capacity = case
    rates = max_min_rates(_padded(paths, len(capacity)), np.array(capacity + [np.inf], dtype=float))
    load = np.zeros(len(capacity))
    for p, r in zip(paths, rates):
        load[p] += r
    assert (load <= np.array(capacity) * (1 + 1e-9)).all()
    for f, p in enumerate(paths):
        # a bottleneck: a saturated link on its path where no flow gets more than f
        assert any(load[link] >= capacity[link] * (1 - 1e-9) and
                   all(rates[g] <= rates[f] * (1 + 1e-9) for g, q in enumerate(paths) if link in q)
                   for link in p)


@st.composite
def random_networks(draw):
    n = draw(st.integers(2, 6))
    switches = draw(st.integers(1, 3))
    nodes = [{"id": f"g{i}", "kind": "gpu"} for i in range(n)] + [{"id": f"s{i}", "kind": "switch"}
                                                                    for i in range(switches)]
    links = [{"a": f"g{i}", "b": f"s{draw(st.integers(0, switches - 1))}",
              "bandwidth": f"{draw(st.integers(1, 20))} GB/s", "latency": f"{draw(st.integers(0, 5))} us"}
             for i in range(n)]
    links += [{"a": f"s{i}", "b": f"s{i + 1}", "bandwidth": f"{draw(st.integers(1, 20))} GB/s",
               "latency": "1 us"} for i in range(switches - 1)]
    topo = topology_from_dict({"name": "random", "nodes": nodes, "links": links})
    transfers = [(f"g{draw(st.integers(0, n - 1))}", f"g{draw(st.integers(0, n - 1))}",
                  draw(st.integers(0, 10**9)), draw(st.sampled_from([0, 0, 0.01, 0.05])))
                 for _ in range(draw(st.integers(1, 12)))]
    return topo, transfers


@settings(max_examples=60, deadline=None)
@given(random_networks())
def test_network_invariants_on_random_graphs(case):
    topo, transfers = case
    times, net = run(topo, transfers, timeline=True)
    # no link ever above capacity
    for _, links, loads in net.stats.timeline:
        assert (loads <= topo.capacity[links] * (1 + 1e-9)).all()
    # bytes conserved: each link carried exactly the bytes of the transfers routed over it
    expected = np.zeros(len(topo.links))
    for src, dst, nbytes, _ in transfers:
        for link in topo.route_indices(src, dst):
            expected[link] += nbytes
    assert net.stats.bytes == pytest.approx(expected, rel=1e-6, abs=1e-3)
    # never faster than the transfer alone on an empty network
    for (src, dst, nbytes, at), t in zip(transfers, times):
        alone = at + topo.path_latency(src, dst) + (nbytes / topo.path_bandwidth(src, dst) if src != dst else 0)
        assert t >= alone * (1 - 1e-9) - 2e-12
    # deterministic
    again, net2 = run(topo, transfers, timeline=True)
    assert again == times
    assert np.array_equal(net.stats.bytes, net2.stats.bytes)


@contextmanager
def globally_checked():
    """After every reallocation, assert the network's rates equal a from-scratch max-min over
    all active flows; yields the list of active-flow counts it checked."""
    original = FluidNetwork._reallocate
    checked = []

    def checking(self):
        original(self)
        active = np.flatnonzero(self._row >= 0)
        if len(active):
            expected = max_min_rates(self._paths[self._row[active]], self._capacity)
            assert self._rate[active] == pytest.approx(expected, rel=1e-9)
            checked.append(len(active))

    FluidNetwork._reallocate = checking
    try:
        yield checked
    finally:
        FluidNetwork._reallocate = original


@settings(max_examples=60, deadline=None)
@given(random_networks())
def test_incremental_allocation_equals_a_global_max_min_at_every_instant(case):
    """The engine re-solves only the components a change touches; the result must be the
    allocation a from-scratch max-min over every active flow gives."""
    topo, transfers = case
    with globally_checked() as checked:
        run(topo, transfers)
    assert checked or all(nbytes == 0 or src == dst for src, dst, nbytes, _ in transfers)


@pytest.mark.parametrize("algorithm", ["ring", "double_binary_tree", "hierarchical", "ps", "naive",
                                       "halving_doubling"])
def test_incremental_allocation_is_global_max_min_for_real_schedules(algorithm):
    from simnet.engine.replay import replay
    from simnet.schedule.catalog import build_schedule

    topo = topology_from_dict({"name": "ls", "generate": {
        "kind": "leaf_spine", "racks": 2, "hosts_per_rack": 2, "gpus_per_host": 4, "spines": 2,
        "nic_per": "host", "oversubscription": 2}})
    with globally_checked() as instants:
        # the SimPy network, whose reallocations this watches (the compiled one equals it: tests/test_compiled.py)
        replay(build_schedule(algorithm, topo, 2**22, chunk_size=2**19), topo, compiled=False)
    assert instants and max(instants) > 1  # flows really shared links
