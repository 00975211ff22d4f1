"""NCCL's send/recv channels: NCCL_MIN_P2P_NCHANNELS, NCCL_MAX_P2P_NCHANNELS and
NCCL_NCHANNELS_PER_NET_PEER set how many channels (connections) each send of all_to_all and
send_recv is cut into, as NCCL 2.30.7 cuts it (src/graph/paths.cc ncclTopoComputeP2pChannels,
ncclTopoGetNchannels; src/enqueue.cc scheduleP2pTasksToPlan, addP2pToPlan). Expected values
follow NCCL's rule and the closed form by hand."""

import json
from dataclasses import replace

import numpy as np
import pytest

from simnet import topology_from_dict
from simnet.engine.replay import replay
from simnet.run.simulate import simulate
from simnet.schedule.algorithms.exchange import _parts
from simnet.schedule.catalog import build_schedule
from simnet.tuning import enqueue, search

MiB = 1 << 20
# two hosts of one H100, each GPU with two 100 Gb/s NICs behind a PCIe switch (the GPU's x16 Gen5 link
# shared, 63.0 GB/s, 48 in NCCL's model: both NICs together, 25 GB/s, stay below it) on one switch
TWO_NICS = topology_from_dict({"name": "two-nics", "generate": {
    "kind": "leaf_spine", "racks": 1, "hosts_per_rack": 2, "gpus_per_host": 1, "nics_per_host": 2,
    "nic_bandwidth": "100 Gb/s"}})
# what NCCL sees of two nodes of 8 H100 with a 400G NIC per GPU behind x16 Gen5 (48 GB/s both)
H100_2 = search.System(ranks=16, nodes=2, cc=90, nvlink_bw=370.8, pci_bw=48.0, nic_bw=48.0, nics=8)


def test_nccl_s_channels_per_peer_and_per_send_follow_paths_cc_and_enqueue_cc(monkeypatch):
    """Two nodes of 8 H100 on 16 communicator channels (``comm_channels``' 16 on H100 nodes
    with 8 NICs of 400G). Per peer: an NVLink peer 2 x 18 links = 36; a network peer one
    per NIC (1: 48 GB/s reaches the GPU's 48) and ceil(48 / 14) = 4 to drive it; the fewest,
    4, is a power of 2, and 4 x ceil(16 / 8) = 8 peers' channels fit in 16: 4 per peer.
    Per send: 4 halved while 4 x 16 ranks > 16 gives 1, a part of at least 64 KiB (half the
    128 KiB step) and doubled while a part is over 128 KiB, up to 4: a 4 MiB send on 4, a
    192 KiB send on 2 (96 KiB parts), 64 KiB on 1."""
    monkeypatch.setattr(enqueue, "comm_channels", lambda system: 16)
    assert enqueue.p2p_channels(H100_2) == (16, 4)
    assert [enqueue.send_channels(H100_2, n) for n in (4 * MiB, 192 << 10, 64 << 10, 0)] == [4, 2, 1, 1]
    # NCCL_NCHANNELS_PER_NET_PEER=1: one channel per peer, so every send on 1; =8: 8 per peer
    # (no halving when it is set, paths.cc:993-1003), a 4 MiB send doubled up to 8
    assert enqueue.send_channels(replace(H100_2, net_peer_channels=1), 4 * MiB) == 1
    assert enqueue.p2p_channels(replace(H100_2, net_peer_channels=8)) == (16, 8)
    assert enqueue.send_channels(replace(H100_2, net_peer_channels=8), 4 * MiB) == 8
    # NCCL_MAX_P2P_NCHANNELS=2: 2 p2p channels; per peer 4 halved while 4 x 2 > 2: 1
    assert enqueue.p2p_channels(replace(H100_2, max_p2p_channels=2)) == (2, 1)
    assert enqueue.send_channels(replace(H100_2, max_p2p_channels=2), 4 * MiB) == 1
    # NCCL_MIN_P2P_NCHANNELS=64: 64 p2p channels, so 4 per send from the start (4 x 16 <= 64):
    # a 256 KiB send on 4 parts of 64 KiB instead of 2 of 128 KiB
    assert enqueue.p2p_channels(replace(H100_2, min_p2p_channels=64)) == (64, 4)
    assert enqueue.send_channels(H100_2, 256 << 10) == 2
    assert enqueue.send_channels(replace(H100_2, min_p2p_channels=64), 256 << 10) == 4
    # above MAXCHANNELS NCCL clamps to 64 (paths.cc:991)
    assert enqueue.p2p_channels(replace(H100_2, min_p2p_channels=1000))[0] == 64


def test_a_send_is_cut_as_nccl_cuts_it_over_its_channels():
    """ncclP2pPartBounds (device.h:260-270): parts of ceil(bytes / parts) rounded up to 4 KiB,
    the last shorter, an empty one left out: 10,000 B over 3 is 4096 + 4096 + 1808; 4096 B
    over 3 is one part."""
    send, part, (lo, hi) = _parts(np.array([0, 20000]), np.array([10000, 24096]), 3)
    assert send.tolist() == [0, 0, 0, 1] and part.tolist() == [0, 1, 2, 0]
    assert lo.tolist() == [0, 4096, 8192, 20000] and hi.tolist() == [4096, 8192, 10000, 24096]


def test_parts_through_both_nics_of_a_gpu_halve_the_time_at_line_rate():
    """model: ideal's closed form: a send of S over k channels from a GPU with two NICs takes
    consecutive NICs (simnet.topology.routing, as NCCL binds channels to NICs), so from 2
    channels on it leaves through both. Each path GPU -> PCIe switch -> NIC -> switch -> NIC ->
    PCIe switch -> GPU: the two PCIe hops 0.5 us each, the cables 1 us, 4 us in all, at 12.5
    GB/s (the NIC): 4 us + S / 12.5 GB/s on one channel, 4 us + S / 25 GB/s on 2 or 4 (the
    GPU's shared x16 link, 63 GB/s, carries both)."""
    size = 64 * MiB
    times = {k: replay(build_schedule("direct", TWO_NICS, size, collective="send_recv", send_channels=k),
                       TWO_NICS).time for k in (1, 2, 4)}
    assert times[1] == pytest.approx(4e-6 + size / 12.5e9, rel=1e-9)
    assert times[2] == pytest.approx(4e-6 + size / 25e9, rel=1e-9) and times[4] == pytest.approx(times[2], rel=1e-9)


def test_parts_that_take_one_route_stay_one_connection():
    """On one NVSwitch every channel of a pair takes the same links, and the fluid network
    shares a link among connections alike: the parts stay one connection, the schedule is
    byte for byte the unsplit one."""
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
    one, four = (build_schedule("direct", box, 8 * MiB, collective="all_to_all", send_channels=k) for k in (1, 4))
    assert len(one) == len(four) == 56
    assert all(np.array_equal(getattr(one, a), getattr(four, a)) for a in ("src", "dst", "lo", "hi", "channel"))


def test_each_variable_changes_send_recv_where_nccl_s_channels_change():
    """Two hosts of one H100 with two 100 Gb/s NICs each (12.5 GB/s, behind the GPU's x16 Gen5,
    48 GB/s in NCCL's model). NCCL's default on its 4 communicator channels: no local peer; a
    network peer one channel per NIC counted (both: 25 GB/s stays below the GPU's 48) and
    ceil(25 / 14) = 2, so 2 per peer; per send 2 (2 x 2 ranks is not over 4), and parts of
    at least 64 KiB take both: a 64 MiB send runs on 2, through both NICs. One channel
    (NCCL_NCHANNELS_PER_NET_PEER=1, or NCCL_MAX_P2P_NCHANNELS=1) leaves through one NIC: the
    same start and latency plus S / 12.5 GB/s instead of S / 25 GB/s, S / 25 GB/s later."""
    size = 64 * MiB

    def run(**env):
        return simulate(TWO_NICS, "direct", size, collective="send_recv", env=env)

    default, two = run(), run(NCCL_NCHANNELS_PER_NET_PEER="2")  # NCCL's own count: it changes nothing, and says so
    assert two.time_s == default.time_s and [w.kind for w in two.warnings] == ["key_unread"]
    for env in ({"NCCL_NCHANNELS_PER_NET_PEER": "1"}, {"NCCL_MAX_P2P_NCHANNELS": "1"}):
        one = run(**env)
        assert one.time_s - default.time_s == pytest.approx(size / 25e9, rel=1e-6) and not one.warnings
    # an all_to_all of two ranks is one send of S/2 each way: the same
    halves = [simulate(TWO_NICS, "direct", size, collective="all_to_all", env=env).time_s
              for env in ({}, {"NCCL_NCHANNELS_PER_NET_PEER": "1"})]
    assert halves[1] - halves[0] == pytest.approx(size / 2 / 25e9, rel=1e-6)


def test_nccl_min_p2p_nchannels_changes_all_to_all_where_it_opens_channels():
    """Two hosts of one H100, two 100 Gb/s NICs each (4 communicator channels).
    NCCL_MAX_P2P_NCHANNELS=1 leaves one p2p channel, so one channel per peer and per send:
    one NIC, S/2 / 25 GB/s later than the default's both. NCCL_MIN_P2P_NCHANNELS=4 beside it
    raises the p2p channels to 4 (paths.cc:985): 2 per peer (the NICs' count), per send 2
    (2 x 2 ranks is not over 4): both NICs again, the default's time."""
    size = 64 * MiB
    assert search.comm_channels(search.system_of(TWO_NICS)) == 4

    def run(**env):
        return simulate(TWO_NICS, "direct", size, collective="all_to_all", env=env).time_s

    capped, raised = run(NCCL_MAX_P2P_NCHANNELS="1"), run(NCCL_MAX_P2P_NCHANNELS="1", NCCL_MIN_P2P_NCHANNELS="4")
    assert capped - run() == pytest.approx(size / 2 / 25e9, rel=1e-6) and raised == run()


def test_more_channels_per_send_can_make_a_send_ll():
    """NCCL picks LL while a send is at most 16 KiB per channel (enqueue.cc:931-932). Two L40S
    on PCIe, 2 communicator channels: a PCIe peer takes 2, a send at least 2 halved while
    2 x 2 ranks > 2 channels, 1; a 20 KiB send on 1 channel is Simple. NCCL_MIN_P2P_NCHANNELS=4
    opens 4: 2 per send (2 x 2 is not over 4), parts of at least 128 KiB / 8 = 16 KiB: 2, and
    20 KiB <= 2 x 16 KiB is LL."""
    pcie = topology_from_dict({"name": "p", "generate": {"kind": "pcie", "gpus": 2, "gpu": "l40s"}})
    assert search.comm_channels(search.system_of(pcie)) == 2
    runs = [simulate(pcie, "direct", 20 << 10, collective="send_recv", env=env)
            for env in ({}, {"NCCL_MIN_P2P_NCHANNELS": "4"})]
    assert [r.protocol for r in runs] == ["Simple", "LL"]


def test_a_value_that_changes_nothing_says_why_in_one_warning():
    """Where the variable leaves NCCL's count alone, where the channels of a send all take one
    route (one NVSwitch: the time is the default's to the ps, simnet's point-to-point sends
    have no per-channel rate), and where no NCCL send/recv runs (a ring AllReduce), the run
    warns key_unread with the reason; the time is the default's."""
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
    same = simulate(TWO_NICS, "direct", 64 * MiB, collective="send_recv", env={"NCCL_MIN_P2P_NCHANNELS": "2"})
    one_route = simulate(box, "direct", 64 * MiB, collective="all_to_all", env={"NCCL_MAX_P2P_NCHANNELS": "1"})
    ring = simulate(box, "ring", 64 * MiB, env={"NCCL_NCHANNELS_PER_NET_PEER": "2"})
    said = [[w.message for w in r.warnings if w.kind == "key_unread"] for r in (same, one_route, ring)]
    assert said[0] == ["NCCL_MIN_P2P_NCHANNELS=2 changed nothing here: NCCL splits each send over 2 channel(s) "
                       "with it as without"]
    assert len(said[1]) == 1 and said[1][0].startswith("NCCL_MAX_P2P_NCHANNELS=1 changed nothing here: NCCL "
                                                       "splits each send over 1 channel(s) with it and ")
    assert "every channel of a send takes its one route" in said[1][0]
    assert said[2] == ["NCCL_NCHANNELS_PER_NET_PEER=2 changed nothing here: only NCCL's send/recv reads it "
                       "(all_to_all's and send_recv's direct), and allreduce's ring is not it"]
    assert one_route.time_s == simulate(box, "direct", 64 * MiB, collective="all_to_all").time_s
    alone = simulate(box, "auto", MiB, gpus=1, collective="send_recv", env={"NCCL_MAX_P2P_NCHANNELS": "1"})
    assert [w.message for w in alone.warnings] == ["NCCL_MAX_P2P_NCHANNELS=1 changed nothing here: one GPU sends "
                                                   "nothing"]


@pytest.mark.parametrize("variable, value, says", [
    ("NCCL_NCHANNELS_PER_NET_PEER", "0", "NCCL ignores a value below 1"),  # init.cc:2040-2042
    ("NCCL_MIN_P2P_NCHANNELS", "0", "a channel count is 1 or more"),
    ("NCCL_MAX_P2P_NCHANNELS", "-1", "a channel count is 1 or more"),
    ("NCCL_MAX_P2P_NCHANNELS", "2x", "not an integer")])
def test_a_value_nccl_would_not_take_is_refused_in_one_line(tmp_path, cli, variable, value, says):
    """Refused as NCCL_MIN_NCHANNELS=0 is: one line naming the file and the variable, exit 2."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: box, generate: {kind: nvswitch, gpus: 2}}\n"
                                     "size: 1 MiB\ncollective: send_recv\nalgorithms: [direct]\n")
    result = cli("run", tmp_path / "s.yaml", env={variable: value})
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(f"{tmp_path / 's.yaml'}: {variable}={value!r}: ") and says in result.stderr


@pytest.mark.parametrize("model, says", [("ideal", "sets NCCL's channels, and model: ideal runs no NCCL"),
                                         ("rccl", "changes what RCCL runs in a way simnet does not model")])
def test_ideal_and_rccl_refuse_them(model, says):
    """model: ideal runs no NCCL; RCCL's send/recv channels are not NCCL 2.30.7's rule."""
    topology = TWO_NICS if model == "ideal" else topology_from_dict(
        {"name": "mi", "generate": {"kind": "full_mesh", "server": "amd-mi300x-platform"}})
    with pytest.raises(ValueError, match=says):
        simulate(topology, "direct", MiB, collective="send_recv", model=model, env={"NCCL_MAX_P2P_NCHANNELS": "1"})


def test_send_recv_across_hosts_runs_simple_and_nccl_proto_does_not_reach_it():
    """A network peer's send/recv connection has no LL buffers unless
    NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (src/transport/net.cc:915-930, init.cc:859, v2.30.7: NCCL's
    env guide says the same), so an 8-byte send across hosts is Simple; on one NVSwitch it is LL
    (at most 16 KiB a channel). NCCL_PROTO restricts the collectives' tuning only
    (graph/tuning.cc:453-456): the same send under NCCL_PROTO=LL or LL128 runs as without it,
    and warns key_unread; NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 is refused as the variables simnet
    does not follow are."""
    box = topology_from_dict({"name": "box", "generate": {"kind": "nvswitch", "gpus": 8}})
    assert simulate(box, "direct", 8, collective="send_recv").protocol == "LL"
    apart = simulate(TWO_NICS, "direct", 8, collective="send_recv")
    assert apart.protocol == "Simple"
    for proto in ("LL", "LL128"):
        run = simulate(TWO_NICS, "direct", 64 * MiB, collective="all_to_all", env={"NCCL_PROTO": proto})
        assert run.protocol == "Simple"
        assert run.time_s == simulate(TWO_NICS, "direct", 64 * MiB, collective="all_to_all").time_s
    with pytest.raises(ValueError, match="NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 changes"):
        simulate(TWO_NICS, "direct", 8, collective="send_recv", env={"NCCL_ALLOC_P2P_NET_LL_BUFFERS": "1"})


def _unread_on_a_box(tmp_path, cli, collective: str, algorithms: str, env: dict) -> list[str]:
    """The key_unread messages of `simnet run` of ``algorithms`` (as YAML writes them) for
    ``collective`` on 4 GPUs of one NVSwitch under ``env``."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\ntopology: {{name: box, generate: {{kind: nvswitch, gpus: 4}}}}\n"
                        f"size: 1 MiB\ncollective: {collective}\nalgorithms: {algorithms}\n")
    result = cli("run", scenario, "--json", "-", env=env)
    assert result.exit_code == 0, result.stderr
    return [w["message"] for run in json.loads(result.stdout)["runs"] for w in run["warnings"]
            if w["kind"] == "key_unread"]


@pytest.mark.parametrize("collective", ["all_to_all", "send_recv"])
def test_nccl_algo_beside_auto_of_a_point_to_point_collective_warns_that_it_changed_nothing(tmp_path, cli,
                                                                                            collective):
    """Fuzz round j #384, #417: auto of AllToAll and SendRecv is direct (NCCL's send/recv has one
    way), so NCCL_ALGO restricts nothing there; it said nothing."""
    said = _unread_on_a_box(tmp_path, cli, collective, "[auto]", {"NCCL_ALGO": "Ring"})
    assert said == [f"NCCL_ALGO=Ring restricts NCCL's pick among its collective algorithms, and {collective} runs "
                    "on NCCL's send/recv, which has one way (auto is direct), so it changed nothing here"]


def test_nccl_proto_beside_send_recv_algorithms_alone_warns_that_it_changed_nothing(tmp_path, cli):
    """A scenario whose algorithms all run on NCCL's send/recv (all_to_all's auto is direct;
    halving_doubling of an AllReduce is simnet's on point-to-point sends) reads no NCCL_PROTO:
    key_unread says so, once a run; beside a ring, which reads it, the halving_doubling run
    alone says it (fuzz n #154: a named ps beside a ring said nothing)."""
    for collective, algorithms, unread in (("all_to_all", "[auto]", 1), ("allreduce", "[halving_doubling]", 1),
                                           ("allreduce", "[ring, halving_doubling]", 1)):
        said = _unread_on_a_box(tmp_path, cli, collective, algorithms, {"NCCL_PROTO": "Simple"})
        assert len(said) == unread and all("NCCL_PROTO=Simple restricts the protocols" in m for m in said)


@pytest.mark.parametrize("variable", ["NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_P2P_NCHANNELS",
                                      "NCCL_MAX_P2P_NCHANNELS", "NCCL_NCHANNELS_PER_NET_PEER"])
def test_a_channel_count_over_nccl_s_64_is_refused_not_limited_in_silence(tmp_path, cli, variable):
    """NCCL runs at most MAXCHANNELS = 64 channels and limits a larger ask to it
    (src/graph/connect.cc:339, paths.cc:982-991, v2.30.7): simnet says so in one line."""
    (tmp_path / "s.yaml").write_text("name: s\ntopology: {name: box, generate: {kind: nvswitch, gpus: 2}}\n"
                                     "size: 1 MiB\ncollective: send_recv\nalgorithms: [direct]\n")
    result = cli("run", tmp_path / "s.yaml", env={variable: "65"})
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"{variable}=65: NCCL runs at most 64 channels (MAXCHANNELS) and limits it to 64" in result.stderr


def test_a_training_step_s_sends_that_move_the_same_say_the_variable_changed_nothing(tmp_path, cli):
    """Fuzz round j #470-#480: in a training step the three variables left the answer as it
    was without a word (a run of its own says key_unread). Mixtral's expert AllToAll inside
    8-GPU hosts (ep 8) takes one NVSwitch: its channels have one route, nothing moves
    otherwise, and the step says so."""
    (tmp_path / "s.yaml").write_text(
        "name: s\ntopology: {name: t, generate: {kind: leaf_spine, racks: 2, hosts_per_rack: 2, gpus_per_host: 8, "
        "gpu: h100}}\ntraining:\n  model: mixtral_8x22b\n  parallelism: {ep: 8}\n  efficiency: 0.5\n")
    plain = cli("run", tmp_path / "s.yaml", "--json", "-")
    varied = cli("run", tmp_path / "s.yaml", "--json", "-", env={"NCCL_MAX_P2P_NCHANNELS": "1"})
    assert plain.exit_code == varied.exit_code == 0, varied.stderr
    step, said = json.loads(varied.stdout), json.loads(plain.stdout)
    assert step["training"] == said["training"]
    assert [w["message"] for w in step["warnings"] if w["kind"] == "key_unread"] == [
        "NCCL_MAX_P2P_NCHANNELS=1 changed nothing in the training step: its NCCL send/recv (expert AllToAlls, "
        "pipeline sends), if it has any, moves the same without it (each send's channels take one route, or NCCL "
        "splits it alike)"]
