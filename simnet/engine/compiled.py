"""The fluid replay of one schedule, or of jobs sharing the network, compiled with numba:
the network of ``simnet.engine.fluid`` and the replays of ``simnet.engine.replay``
(``replay``, ``replay_jobs`` without its skip over repeated cycles), the same rules and the
same arithmetic, on an integer-time calendar instead of SimPy events.

Why: the SimPy network spends ~150 us of Python per simulated instant (about a hundred
numpy calls on arrays of a few elements each), so a contended run of millions of
transfers takes minutes. Here an instant costs what its changes cost: a heap of finish
times instead of a scan of every flow, a list of the flows on each link for the search of
the flows a change affects, max-min filling over that component only, link statistics
integrated as each link changes.

Exactly the SimPy engine's answer, to the picosecond and the bit: flows take the same slots
(the free list is the SimPy network's), events at one instant run in the order SimPy runs
them (the calendar orders by time, then by creation), the replay's nested calls run depth
first from a work list, and every float is computed by the same operations in the same
order (``tests/test_compiled.py`` compares the two engines transfer by transfer and link by
link). Faults that take a link down move routes: the replay routes around them before the
run as the SimPy network would at their instants (``FluidNetwork.detour``, the same rows in
the same order), and at each such fault the flows crossing them move to their detours with
the bytes they have left, as ``FluidNetwork.set_capacity`` moves them.

numba compiles these functions the first time they run after an install (~25 s of CPU,
once: plain arrays in a few packed matrices, as typed containers and many arguments
cost numba far more to compile) and caches the machine code beside this file. Buffers
whose size depends on the run (the calendar, the work list, a timeline) start at a guess;
a run that outgrows one stops, and ``run`` starts it again with that buffer doubled.
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
from numba import njit

__all__ = ["run", "slot_bound", "loaded", "STATE", "OK", "BEYOND_HORIZON", "CUT"]

# the constants of the engines this one equals (checked against them in tests/test_compiled.py)
PS = 10**12  # simnet.topology.graph.PS_PER_SECOND
SLACK = 1e-3  # simnet.engine.clock.WHOLE_PS_SLACK
TIE = 1e-9  # simnet.engine.maxmin.TIE
SATURATED = 0.999  # simnet.engine.accounting.SATURATED
HORIZON = 10**18  # simnet.engine.clock.HORIZON_PS

OK, BEYOND_HORIZON, FULL, PAUSED, CUT = 0, 1, 2, 3, 4
"""What the compiled run returns: finished; a flow would end past the horizon; a buffer is
full (``iv[_FULL]`` says which: ``run`` doubles it and starts again); paused after the
instants asked, to say how far it is (``run`` calls it again, and it goes on); a fault
took down links that leave some route with no detour (``run`` raises ``Cut``)."""

PAUSE_INSTANTS = 2048
"""Simulated instants between two reports of progress, when someone listens."""


def _ints(count: int) -> tuple:
    """0, 1, ... as numpy int64s: numba compiles a function once for an int64 argument, but
    once per value for a plain int constant passed to it (a literal)."""
    return tuple(np.int64(i) for i in range(count))


STATE = ("row", "delay", "holds", "stamp", "next")
"""The rows of the replay's per-transfer ``state`` (``simnet.engine.replay``): route row,
software latency ps, what holds it back, scratch, the next transfer of a calendar event."""
_ROW, _DELAY, _HOLDS, _STAMP, _NEXT = _ints(5)
_START, _SENT, _DONE = _ints(3)  # rows of ``times``
_WIRE, _CAP = _ints(2)  # rows of the transfers' floats
_LOCAL, _DEFERRED = _ints(2)  # rows of their flags

# the flows, by slot: integers, floats, flags; and per slot and hop, the lists of flows on each link
_F_ROW, _F_SINCE, _F_TAG, _F_DELAY, _F_HEAP, _F_POS, _F_FREE = _ints(7)
_F_LEFT, _F_SIZE, _F_RATE, _F_FINISH, _F_CAPPED = _ints(5)
_F_NEW, _F_MEMBER = _ints(2)
_E_NEXT, _E_PREV = _ints(2)
# the links (the padding link last): integers, floats, flags
(_L_HEAD, _L_USERS, _L_FLOWS, _L_SATURATED_PS, _L_BUSY_PS, _L_EITHER_PS, _L_MAX_FLOWS, _L_SINCE, _L_PAIR_SINCE,
 _L_LOCAL, _L_COUNT, _L_REVERSE) = _ints(12)
_L_CAPACITY, _L_BYTES, _L_DELTA, _L_LOAD, _L_IN_FORCE, _L_PEAK, _L_REMAINING, _L_TAKEN = _ints(8)
_L_SLACK, _L_TOUCHED, _L_SATURATED, _L_BUSY, _L_PAIR_SATURATED, _L_MARKED, _L_GONE, _L_HIT = _ints(8)
# lists: per slot (flows to rate anew, members of a component, growing and frozen in a filling), per link
# (freed, changed, marked in a search, used in a filling)
_B_NEW, _B_MEMBERS, _B_GROWING, _B_FROZEN = _ints(4)
_B_GONE, _B_TOUCHED, _B_MARKED, _B_USED = _ints(4)

_ZERO = np.int64(0)

# calendar events: rows (time ps, creation sequence, kind, payload)
_DELIVER, _USABLE, _LAUNCH, _FAULT, _BEGIN, _ISSUE = _ints(6)
# the replay's calls, run depth first from the work list: rows (kind, first, count) of the pool
_W_LAUNCH, _W_SENT, _W_DELIVERED, _W_USABLE, _W_REDUCE_LATER = _ints(5)
# scalars, in one int64 array every function shares
(_NOW, _SEQ, _WAKE, _LOGICAL, _FREE_N, _ACTIVE, _EVENTS, _NEW, _GONE, _TOUCHED, _HEAP, _POOL, _WORK, _LOADS,
 _COMMITS, _FULL, _STARTED, _DELIVERED, _REROUTED, _LOGGED, _RUNS, _RUNNING, _OWNERS, _RUNS_DONE) = _ints(24)
# buffers that may fill (``iv[_FULL]``)
_FULL_EVENTS, _FULL_WORK, _FULL_POOL, _FULL_COMMITS, _FULL_LOADS, _FULL_SLOTS, _FULL_RUNS = _ints(8)[1:]
# the jobs' integers: their transfers (first, count), launch latency ps, first issue ps, runs (0: background),
# period ps; the run under way or planned, when it was issued ps, its transfers not usable yet, its network
# listener's number (-1 until it starts a flow)
_J_FIRST, _J_COUNT, _J_LAUNCH, _J_START, _J_REPEAT, _J_PERIOD, _J_RUN, _J_ISSUED, _J_LEFT, _J_OWNER = _ints(10)

FIRST_SIZES = {_FULL_EVENTS: 1024, _FULL_WORK: 1024, _FULL_POOL: 1 << 16, _FULL_COMMITS: 1024, _FULL_LOADS: 1 << 14,
               _FULL_RUNS: 1024}
"""Entries the buffers that may fill start with: calendar events, calls on the work list,
transfer ids in its pool, timeline changes and link loads, jobs' runs."""

TIMELINE_PER_TRANSFER = (2, 12)
"""Timeline changes and link loads a run with a timeline starts with per transfer: about what
it records (cross_rack at 256 MiB: up to 1.3 changes and 11.5 loads a transfer, hierarchical's);
from 1,024 and 16,384 a 19,968-transfer run filled and started over nine times (2.3 s, 0.9 s
sized so)."""

TIMELINE_FIRST_MOST = (1 << 19, 1 << 21)
"""At most this many to start with (8 and 32 MB); a run that needs more doubles them."""

_JIT = {"cache": True, "error_model": "numpy", "no_cpython_wrapper": True}

Transfers = namedtuple("Transfers", "state times floats flags gate reduce dep_ptr dep_idx fol_ptr fol_idx "
                                    "job ji holds runs")  # jobs mode when ji has columns (its jobs), whatever they hold
"""The replay's transfers: ``state`` (``STATE``), ``times``, floats (bytes on the wire,
rate cap B/s), flags (a join, deferred to its gate), each one's gate and reduction delay
(ps; empty when no rank joins late and reductions are free), who waits for its delivery
and who queues behind it (CSR); with jobs (``run``'s ``jobs``), each transfer's job (empty:
one schedule), the jobs' integers (``_J_FIRST`` ...), each transfer's holds at the start of
a run, and the runs finished (rows: job, issued ps, end ps)."""

Network = namedtuple("Network", "paths tight latency moved li lf lb overhead")
"""Routes (padded link matrices, full and without the slack links; summed latency ps per
row; the row each row's transfers take now: its detour once links went down); the links'
integers, floats and flags; ps added to every delivery."""

Detours = namedtuple("Detours", "ptr rows to cut scratch lefts log")
"""Per fault (CSR ``ptr``) the route rows that cross the links it takes down and their
detours' rows; whether it leaves a route none (``CUT``); a row -> detour scratch (-1);
the bytes each moved flow had left, and per fault that moved flows (fault, count), in the
order they were moved."""

Flows = namedtuple("Flows", "fi ff fb fe")
"""The network's flows by slot (``FluidNetwork``'s slots): integers (with the free list
and the heap of finish times), floats, flags, and per slot and hop the lists of flows on
each link."""

Buffers = namedtuple("Buffers", "events work pool per_slot per_link mm_local tl tl_link tl_load")
"""The calendar (rows of 4), the work list (rows of 3) and its pool of transfer ids, lists
per slot and per link, the filling's local paths, the timeline (per change: ps, count;
per link: index and load)."""


@njit(**_JIT)
def _sorted(values):
    out = values.copy()
    out.sort()
    return out


@njit(**_JIT)
def _distinct(values):
    """The distinct ``values``, ascending."""
    ordered = _sorted(values)
    count = 0
    for i in range(len(ordered)):
        if i == 0 or ordered[i] != ordered[i - 1]:
            ordered[count] = ordered[i]
            count += 1
    return ordered[:count]


@njit(**_JIT)
def _where(values, value, ids):
    """Those of ``ids`` whose entry of ``values`` (same order) is ``value``, in order."""
    out = np.empty(len(ids), dtype=np.int64)
    count = 0
    for i in range(len(ids)):
        if values[i] == value:
            out[count] = ids[i]
            count += 1
    return out[:count]


@njit(**_JIT)
def _linked(ids, state):
    """Chain transfer ``ids`` (in order) through ``state[_NEXT]``: the first (-1: none)."""
    for i in range(len(ids) - 1):
        state[_NEXT, ids[i]] = ids[i + 1]
    if len(ids) == 0:
        return -1
    state[_NEXT, ids[-1]] = -1
    return ids[0]


@njit(**_JIT)
def _unlinked(head, state):
    """The transfers chained from ``head`` by ``_linked``, in order."""
    count = 0
    t = head
    while t >= 0:
        count += 1
        t = state[_NEXT, t]
    out = np.empty(count, dtype=np.int64)
    t = head
    for i in range(count):
        out[i] = t
        t = state[_NEXT, t]
    return out


@njit(**_JIT)
def _csr_rows(ptr, idx, items):
    """``simnet.schedule.transfers.csr_rows``: rows ``items`` of a CSR list, concatenated."""
    total = 0
    for t in items:
        total += ptr[t + 1] - ptr[t]
    out = np.empty(total, dtype=np.int64)
    k = 0
    for t in items:
        for j in range(ptr[t], ptr[t + 1]):
            out[k] = idx[j]
            k += 1
    return out


# ------------------------------------------------------------------ the calendar
@njit(**_JIT)
def _before(events, i, j):
    return events[i, 0] < events[j, 0] or (events[i, 0] == events[j, 0] and events[i, 1] < events[j, 1])


@njit(**_JIT)
def _swap(events, i, j):
    for c in range(4):
        events[i, c], events[j, c] = events[j, c], events[i, c]


@njit(**_JIT)
def _schedule(b, iv, when, kind, payload):
    """Put an event on the calendar at ``when`` (ps), after those made before it; False
    when the calendar is full."""
    events = b.events
    n = iv[_EVENTS]
    if n == len(events):
        iv[_FULL] = _FULL_EVENTS
        return False
    events[n, 0], events[n, 1], events[n, 2], events[n, 3] = when, iv[_SEQ], kind, payload
    iv[_SEQ] += 1
    iv[_EVENTS] = n + 1
    while n > 0 and _before(events, n, (n - 1) // 2):
        _swap(events, n, (n - 1) // 2)
        n = (n - 1) // 2
    return True


@njit(**_JIT)
def _next_event(b, iv):
    """Take the calendar's first event: (kind, payload)."""
    events = b.events
    kind, payload = events[0, 2], events[0, 3]
    n = iv[_EVENTS] - 1
    iv[_EVENTS] = n
    _swap(events, _ZERO, n)
    i = 0
    while True:
        first = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < n and _before(events, child, first):
                first = child
        if first == i:
            return kind, payload
        _swap(events, i, first)
        i = first


# ------------------------------------------------------ flows' finish times by heap
@njit(**_JIT)
def _heap_move(fi, finish, i, n):
    """Restore the heap of slots by finish time around position ``i`` (of ``n``)."""
    heap, pos = fi[_F_HEAP], fi[_F_POS]
    while i > 0 and finish[heap[i]] < finish[heap[(i - 1) // 2]]:
        parent = (i - 1) // 2
        heap[i], heap[parent] = heap[parent], heap[i]
        pos[heap[i]], pos[heap[parent]] = i, parent
        i = parent
    _sift_down(heap, pos, finish, i, n)


@njit(**_JIT)
def _sift_down(heap, pos, finish, i, n):
    """Move the slot at position ``i`` of the heap (of ``n``) down below every child that
    finishes earlier."""
    while True:
        first = i
        for child in (2 * i + 1, 2 * i + 2):
            if child < n and finish[heap[child]] < finish[heap[first]]:
                first = child
        if first == i:
            return
        heap[i], heap[first] = heap[first], heap[i]
        pos[heap[i]], pos[heap[first]] = i, first
        i = first


@njit(**_JIT)
def _untimed(fl, iv, s):
    """Take slot ``s`` out of the heap of finish times."""
    fi = fl.fi
    i = fi[_F_POS, s]
    n = iv[_HEAP] - 1
    iv[_HEAP] = n
    fi[_F_POS, s] = -1
    if i != n:
        last = fi[_F_HEAP, n]
        fi[_F_HEAP, i] = last
        fi[_F_POS, last] = i
        _heap_move(fi, fl.ff[_F_FINISH], i, n)


@njit(**_JIT)
def _timed(fl, iv, s):
    """Slot ``s``'s finish time changed: keep it in the heap while it is finite."""
    fi = fl.fi
    i = fi[_F_POS, s]
    if fl.ff[_F_FINISH, s] < np.inf:
        if i < 0:
            i = iv[_HEAP]
            iv[_HEAP] = i + 1
            fi[_F_HEAP, i] = s
            fi[_F_POS, s] = i
        _heap_move(fi, fl.ff[_F_FINISH], i, iv[_HEAP])
    elif i >= 0:
        _untimed(fl, iv, s)


@njit(**_JIT)
def _heap_remade(fl, iv):
    """The heap of finish times made anew from every slot with a finite finish (Floyd's
    heap construction, ~2 steps a slot): cheaper than moving each slot whose finish time
    changed (~log2(flows) steps each) once most of them did. The heap's layout decides no
    time: only its earliest finish is read."""
    fi, finish = fl.fi, fl.ff[_F_FINISH]
    heap, pos = fi[_F_HEAP], fi[_F_POS]
    n = 0
    for s in range(iv[_LOGICAL]):
        if finish[s] < np.inf:
            heap[n] = s
            pos[s] = n
            n += 1
        else:
            pos[s] = -1
    iv[_HEAP] = n
    for top in range(n // 2 - 1, -1, -1):  # each subtree's root sifted down, the last first
        _sift_down(heap, pos, finish, top, n)


@njit(**_JIT)
def _earliest(fl, iv):
    """The earliest finish of a flow (ps, float; inf: none)."""
    return fl.ff[_F_FINISH, fl.fi[_F_HEAP, 0]] if iv[_HEAP] else np.inf


# ------------------------------------------------------------------ the network
@njit(**_JIT)
def _listed(flags, row, items, iv, count_at, item):
    """Add ``item`` to the list ``items`` (its length at ``iv[count_at]``) unless
    ``flags[row, item]`` says it is there."""
    if not flags[row, item]:
        flags[row, item] = True
        items[iv[count_at]] = item
        iv[count_at] += 1


@njit(**_JIT)
def _start(ids, tr, net, fl, b, iv):
    """``FluidNetwork.start``: flows for transfers ``ids`` (each crosses links) from now,
    in the slots the SimPy network would give them; False when the slots run out."""
    count = len(ids)
    if count == 0:
        return True
    if tr.ji.shape[1] and tr.ji[_J_OWNER, tr.job[ids[0]]] < 0:  # a run's first flow: the network numbers its listener
        tr.ji[_J_OWNER, tr.job[ids[0]]] = iv[_OWNERS]
        iv[_OWNERS] += 1
    fi, ff = fl.fi, fl.ff
    free_n = iv[_FREE_N]
    if free_n < count:  # FluidNetwork._allocate: grow as it grows, so every flow gets the same slot
        old = iv[_LOGICAL]
        grow = max(count - free_n, old, 64)
        if old + grow > fi.shape[1]:
            iv[_FULL] = _FULL_SLOTS
            return False
        for slot in range(old + grow - 1, old - 1, -1):
            fi[_F_FREE, free_n] = slot
            free_n += 1
        iv[_LOGICAL] = old + grow
    first = free_n - count
    iv[_FREE_N] = first
    now = iv[_NOW]
    for i in range(count):
        t = ids[i]
        s = fi[_F_FREE, first + i]
        r = net.moved[tr.state[_ROW, t]]  # routes resolved before a link went down take their detour
        wire = tr.floats[_WIRE, t]
        fi[_F_ROW, s] = r
        ff[_F_LEFT, s] = wire
        ff[_F_SIZE, s] = wire
        fi[_F_SINCE, s] = now
        ff[_F_RATE, s] = 0.0
        ff[_F_FINISH, s] = np.inf if wire > 0 else now  # nothing to send: it finishes now
        _timed(fl, iv, s)
        fi[_F_TAG, s] = t
        ff[_F_CAPPED, s] = tr.floats[_CAP, t]
        fi[_F_DELAY, s] = tr.state[_DELAY, t]
        _on_route(s, r, net, fl)
        _listed(fl.fb, _F_NEW, b.per_slot[_B_NEW], iv, _NEW, s)
    iv[_ACTIVE] += count
    return True


@njit(**_JIT)
def _on_route(s, r, net, fl):
    """Slot ``s``'s flow takes route row ``r``: a user of its links, on the list of flows of
    each link where sharing is decided (as entry ``s * hops + h``)."""
    hops = net.paths.shape[1]
    users, head, fe = net.li[_L_USERS], net.li[_L_HEAD], fl.fe
    pad = len(users) - 1
    for h in range(hops):
        link = net.paths[r, h]
        if link != pad:
            users[link] += 1
        link = net.tight[r, h]
        if link != pad:
            e = s * hops + h
            after = head[link]
            fe[_E_NEXT, e] = after
            fe[_E_PREV, e] = -1
            if after >= 0:
                fe[_E_PREV, after] = e
            head[link] = e


@njit(**_JIT)
def _off_lists(s, r, net, fl):
    """Slot ``s``'s flow (on route row ``r``) leaves the lists of flows of its links."""
    hops = net.paths.shape[1]
    head, fe = net.li[_L_HEAD], fl.fe
    pad = len(head) - 1
    for h in range(hops):
        link = net.tight[r, h]
        if link != pad:
            e = s * hops + h
            before, after = fe[_E_PREV, e], fe[_E_NEXT, e]
            if before >= 0:
                fe[_E_NEXT, before] = after
            else:
                head[link] = after
            if after >= 0:
                fe[_E_PREV, after] = before


@njit(**_JIT)
def _max_min(members, net, row, caps, capped, rates, b):
    """``simnet.engine.maxmin.max_min_rates`` of the flows in slots ``members`` over their
    tight paths, into ``rates`` (same order): the same float operations in the same order.
    The padding link (capacity infinite) never binds, so it is left out."""
    tight = net.tight
    local_of, count, hit = net.li[_L_LOCAL], net.li[_L_COUNT], net.lb[_L_HIT]
    remaining, taken, capacity = net.lf[_L_REMAINING], net.lf[_L_TAKEN], net.lf[_L_CAPACITY]
    pad = len(local_of) - 1
    hops = tight.shape[1]
    flows = len(members)
    used = 0
    listed = b.per_link[_B_USED]
    for f in range(flows):
        r = row[members[f]]
        for h in range(hops):
            link = tight[r, h]
            if link != pad and local_of[link] < 0:
                local_of[link] = 0
                listed[used] = link
                used += 1
    links = listed[:used]  # local numbers in order of first use: no float result depends on them
    for k in range(used):
        local_of[links[k]] = k
        count[k] = 0
        remaining[k] = capacity[links[k]]
    local = b.mm_local
    for f in range(flows):
        r = row[members[f]]
        for h in range(hops):
            link = tight[r, h]
            k = -1 if link == pad else local_of[link]
            local[f * hops + h] = k
            if k >= 0:
                count[k] += 1
    rates[:] = np.inf
    growing, frozen = b.per_slot[_B_GROWING], b.per_slot[_B_FROZEN]
    for f in range(flows):
        growing[f] = f
    n_growing = flows
    share = np.empty(used)
    while n_growing:
        level = np.inf
        for k in range(used):
            share[k] = remaining[k] / count[k] if count[k] > 0 else np.inf
            level = min(level, share[k])
        if capped:
            for g in range(n_growing):
                level = min(level, caps[growing[g]])
        if not level < np.inf:
            break  # the remaining flows cross no finite link and have no cap
        reach = level * (1 + TIE) + 1e-300
        n_frozen = 0
        kept = 0
        for g in range(n_growing):  # a flow freezes at its cap or when a link it crosses is full
            f = growing[g]
            stop = capped and caps[f] <= reach
            h = 0
            while not stop and h < hops:
                k = local[f * hops + h]
                stop = k >= 0 and share[k] <= reach
                h += 1
            if stop:
                frozen[n_frozen] = f
                n_frozen += 1
            else:
                growing[kept] = f
                kept += 1
        n_growing = kept
        floor = max(level, 0.0)
        for i in range(n_frozen):  # per link, the frozen flows' rates summed in flow order, then taken off
            f = frozen[i]
            rate = min(floor, caps[f]) if capped else floor
            rates[f] = rate
            for h in range(hops):
                k = local[f * hops + h]
                if k >= 0:
                    taken[k] += rate
                    count[k] -= 1
                    hit[k] = True
        for k in range(used):
            if hit[k]:
                remaining[k] -= taken[k]
                taken[k] = 0.0
                hit[k] = False
    for k in range(used):
        local_of[links[k]] = -1


@njit(**_JIT)
def _mark_route(net, r, marked, n_marked):
    """Mark the links route row ``r`` crosses where sharing is decided and list those not
    marked before after the first ``n_marked`` of ``marked``; returns the new count."""
    pad = net.lb.shape[1] - 1
    for h in range(net.tight.shape[1]):
        link = net.tight[r, h]
        if link != pad and not net.lb[_L_MARKED, link]:
            net.lb[_L_MARKED, link] = True
            marked[n_marked] = link
            n_marked += 1
    return n_marked


@njit(**_JIT)
def _affected(net, fl, b, iv):
    """``FluidNetwork._affected``: (flows started or to rate anew that share no link that
    can bind with anyone, the slots of every flow connected to a change through links
    that can bind), both ascending."""
    hops = net.tight.shape[1]
    users, head = net.li[_L_USERS], net.li[_L_HEAD]
    marked_at, slack, gone_at = net.lb[_L_MARKED], net.lb[_L_SLACK], net.lb[_L_GONE]
    fi, member = fl.fi, fl.fb[_F_MEMBER]
    pad = len(users) - 1
    new = _sorted(b.per_slot[_B_NEW, :iv[_NEW]])
    iv[_NEW] = 0
    count = 0
    for s in new:
        fl.fb[_F_NEW, s] = False
        if fi[_F_ROW, s] >= 0:  # not finished already (nothing to send)
            new[count] = s
            count += 1
    new = new[:count]
    marked = b.per_link[_B_MARKED]
    n_marked = _ZERO
    for i in range(iv[_GONE]):  # links freed: capacity someone else can use
        link = b.per_link[_B_GONE, i]
        gone_at[link] = False
        if users[link] > 0 and not slack[link] and not marked_at[link]:
            marked_at[link] = True
            marked[n_marked] = link
            n_marked += 1
    iv[_GONE] = 0
    alone = np.ones(count, dtype=np.bool_)
    for i in range(count):
        r = fi[_F_ROW, new[i]]
        for h in range(hops):
            link = net.tight[r, h]
            if link != pad and users[link] != 1:
                alone[i] = False
        if not alone[i]:
            n_marked = _mark_route(net, r, marked, n_marked)
    members = 0
    k = 0
    while k < n_marked:  # the flows and links connected to a marked link
        e = head[marked[k]]
        k += 1
        while e >= 0:
            s = e // hops
            if not member[s]:
                member[s] = True
                b.per_slot[_B_MEMBERS, members] = s
                members += 1
                n_marked = _mark_route(net, fi[_F_ROW, s], marked, n_marked)
            e = fl.fe[_E_NEXT, e]
    for i in range(n_marked):
        marked_at[marked[i]] = False
    kept = 0
    for i in range(count):
        if alone[i] and not member[new[i]]:
            new[kept] = new[i]
            kept += 1
    shared = b.per_slot[_B_MEMBERS, :members]
    if members * 8 > iv[_LOGICAL]:  # over an eighth of the slots: listed again off their flags, cheaper than a sort
        n = 0
        for s in range(iv[_LOGICAL]):
            if member[s]:
                shared[n] = s
                n += 1
    else:
        shared.sort()
    for s in shared:
        member[s] = False
    return new[:kept], shared


@njit(**_JIT)
def _pair_until(net, link, now):
    """Count the time ``link``'s port (it or its reverse) was saturated up to ``now``."""
    li = net.li
    li[_L_EITHER_PS, link] += (now - li[_L_PAIR_SINCE, link]) * net.lb[_L_PAIR_SATURATED, link]
    li[_L_PAIR_SINCE, link] = now


@njit(**_JIT)
def _commit(net, b, iv, timeline):
    """``LinkStats.commit``: the changed links take their new loads from now (in link order
    where a timeline records them), each link's integrals taken up to now in its old state;
    False when the timeline is full."""
    count = iv[_TOUCHED]
    if count == 0:
        return True
    now = iv[_NOW]
    iv[_TOUCHED] = 0
    li, lf, lb = net.li, net.lf, net.lb
    if timeline:
        if iv[_COMMITS] == b.tl.shape[1]:
            iv[_FULL] = _FULL_COMMITS
            return False
        if iv[_LOADS] + count > len(b.tl_link):
            iv[_FULL] = _FULL_LOADS
            return False
        b.tl[0, iv[_COMMITS]] = now
        b.tl[1, iv[_COMMITS]] = count
        iv[_COMMITS] += 1
    # each link's statistics are its own: link order matters only to the timeline's records
    touched = _sorted(b.per_link[_B_TOUCHED, :count]) if timeline else b.per_link[_B_TOUCHED, :count]
    for link in touched:
        lb[_L_TOUCHED, link] = False
        flows = li[_L_USERS, link]
        load = lf[_L_LOAD, link] + lf[_L_DELTA, link]
        lf[_L_DELTA, link] = 0.0
        if flows == 0:
            load = 0.0  # no rounding residue on idle links
        lf[_L_LOAD, link] = load
        elapsed = now - li[_L_SINCE, link]
        li[_L_SATURATED_PS, link] += elapsed * lb[_L_SATURATED, link]
        li[_L_BUSY_PS, link] += elapsed * lb[_L_BUSY, link]
        li[_L_SINCE, link] = now
        in_force = lf[_L_IN_FORCE, link]
        lb[_L_SATURATED, link] = load > 0 and load >= SATURATED * in_force
        lb[_L_BUSY, link] = load > 0
        lf[_L_PEAK, link] = max(lf[_L_PEAK, link], load / in_force if in_force > 0 else 0.0)
        li[_L_MAX_FLOWS, link] = max(li[_L_MAX_FLOWS, link], flows)
        li[_L_FLOWS, link] = flows
        back = li[_L_REVERSE, link]
        _pair_until(net, link, now)
        lb[_L_PAIR_SATURATED, link] = lb[_L_SATURATED, link] or (back >= 0 and lb[_L_SATURATED, back])
        if back >= 0:
            _pair_until(net, back, now)
            lb[_L_PAIR_SATURATED, back] = lb[_L_SATURATED, back] or lb[_L_SATURATED, link]
        if timeline:
            b.tl_link[iv[_LOADS]] = link
            b.tl_load[iv[_LOADS]] = load
            iv[_LOADS] += 1
    return True


@njit(**_JIT)
def _reallocate(net, fl, b, iv, timeline):
    """``FluidNetwork._reallocate``: rates of the affected flows, their finish times, the
    links' loads, the next wake-up."""
    now = iv[_NOW]
    hops = net.paths.shape[1]
    capacity, slack = net.lf[_L_CAPACITY], net.lb[_L_SLACK]
    fi, ff = fl.fi, fl.ff
    pad = len(capacity) - 1
    alone, shared = _affected(net, fl, b, iv)
    slots = np.concatenate((alone, shared))
    rates = np.empty(len(slots))
    for i in range(len(alone)):  # alone on every link that can bind: the narrowest link or the cap
        r = fi[_F_ROW, alone[i]]
        bottleneck = np.inf
        for h in range(hops):
            bottleneck = min(bottleneck, capacity[net.paths[r, h]])
        rates[i] = min(bottleneck, ff[_F_CAPPED, alone[i]])
    if len(shared):
        caps = np.empty(len(shared))
        for i in range(len(shared)):  # the slack links still bound each flow's own rate
            caps[i] = ff[_F_CAPPED, shared[i]]
            r = fi[_F_ROW, shared[i]]
            for h in range(hops):
                link = net.paths[r, h]
                if slack[link]:
                    caps[i] = min(caps[i], capacity[link])
        _max_min(shared, net, fi[_F_ROW], caps, bool(np.any(caps < np.inf)), rates[len(alone):], b)
    latest = -np.inf
    # each slot whose finish changes moves in the heap at once (later moves need a heap), or
    # the heap is made anew after all of them where that costs less even if all change
    remade = len(slots) * math.log2(iv[_HEAP] + 2) > iv[_LOGICAL]
    for i in range(len(slots)):
        s = slots[i]
        old = ff[_F_RATE, s]
        rate = rates[i]
        if rate == old:
            continue
        ff[_F_LEFT, s] -= old * ((now - fi[_F_SINCE, s]) / PS)
        fi[_F_SINCE, s] = now
        ff[_F_RATE, s] = rate
        ff[_F_FINISH, s] = now + ff[_F_LEFT, s] / rate * PS
        latest = max(latest, ff[_F_FINISH, s])
        if not remade:
            _timed(fl, iv, s)
        r = fi[_F_ROW, s]
        for h in range(hops):
            link = net.paths[r, h]
            if link != pad:
                net.lf[_L_DELTA, link] += rate - old
                _listed(net.lb, _L_TOUCHED, b.per_link[_B_TOUCHED], iv, _TOUCHED, link)
    if remade:
        _heap_remade(fl, iv)
    if latest > HORIZON:
        return BEYOND_HORIZON
    if not _commit(net, b, iv, timeline):
        return FULL
    if iv[_ACTIVE]:
        due = _earliest(fl, iv)
        if not due < np.inf:
            return BEYOND_HORIZON  # flows that never finish (no rate at all)
        iv[_WAKE] = now + max(1, math.ceil(due - now - SLACK))
    return OK


# ------------------------------------------------------------------ the replay
@njit(**_JIT)
def _work(b, iv, kind, first, count):
    """Push the call ``kind`` on pool entries ``[first, first + count)``; False when full."""
    n = iv[_WORK]
    if n == len(b.work):
        iv[_FULL] = _FULL_WORK
        return False
    b.work[n, 0], b.work[n, 1], b.work[n, 2] = kind, first, count
    iv[_WORK] = n + 1
    return True


@njit(**_JIT)
def _pooled(b, iv, ids):
    """Copy ``ids`` to the pool: their first entry (-1: the pool is full)."""
    first = iv[_POOL]
    if first + len(ids) > len(b.pool):
        iv[_FULL] = _FULL_POOL
        return -1
    for i in range(len(ids)):
        b.pool[first + i] = ids[i]
    iv[_POOL] = first + len(ids)
    return first


@njit(**_JIT)
def _call(b, iv, kind, ids):
    """Push the call ``kind`` on transfers ``ids``; False when full."""
    first = _pooled(b, iv, ids)
    return first >= 0 and _work(b, iv, kind, first, len(ids))


@njit(**_JIT)
def _launch(candidates, tr, net, fl, b, iv):
    """The replay's ``_launch``: start those of ``candidates`` nothing holds back (each
    once, at its last place) and whose ranks have joined (the others at their gates, on the
    calendar); joins (local transfers) are sent and usable at once: pushed as calls."""
    now = iv[_NOW]
    state, flags = tr.state, tr.flags
    ready = np.empty(len(candidates), dtype=np.int64)
    count = 0
    for t in candidates:
        if state[_HOLDS, t] == 0:
            ready[count] = t
            count += 1
    for i in range(count):  # each once, at its last place
        state[_STAMP, ready[i]] = i
    kept = 0
    for i in range(count):
        if state[_STAMP, ready[i]] == i:
            ready[kept] = ready[i]
            kept += 1
    ready = ready[:kept]
    if len(tr.gate) and kept:
        late = np.empty(kept, dtype=np.int64)
        n_late = 0
        kept = 0
        for t in ready:
            if tr.gate[t] > now:  # early: at its gate, once
                if not flags[_DEFERRED, t]:
                    flags[_DEFERRED, t] = True
                    late[n_late] = t
                    n_late += 1
            else:
                ready[kept] = t
                kept += 1
        ready = ready[:kept]
        gates = tr.gate[late[:n_late]]
        for when in _distinct(gates):
            if not _schedule(b, iv, when, _LAUNCH, _linked(_where(gates, when, late[:n_late]), state)):
                return False
    remote = np.empty(kept, dtype=np.int64)
    joins = np.empty(kept, dtype=np.int64)
    n_remote = n_joins = 0
    for t in ready:
        state[_HOLDS, t] = 1
        tr.times[_START, t] = now
        if flags[_LOCAL, t]:
            joins[n_joins] = t
            n_joins += 1
        else:
            remote[n_remote] = t
            n_remote += 1
    if not _start(remote[:n_remote], tr, net, fl, b, iv):
        return False
    if n_joins == 0:
        return True
    first = _pooled(b, iv, joins[:n_joins])  # sent, then usable: the later call first on the list
    return first >= 0 and _work(b, iv, _W_USABLE, first, n_joins) and _work(b, iv, _W_SENT, first, n_joins)


@njit(**_JIT)
def _release(ids, at, now, ptr, idx, state, b, iv):
    """Time transfers ``ids`` ``now`` in ``at`` and take one hold off each of those waiting
    for them (CSR ``ptr``, ``idx``: the queued behind them, or their dependents), then push
    their launch; False when full."""
    for t in ids:
        at[t] = now
    waiting = _csr_rows(ptr, idx, ids)
    for t in waiting:
        state[_HOLDS, t] -= 1
    return len(waiting) == 0 or _call(b, iv, _W_LAUNCH, waiting)


@njit(**_JIT)
def _run_ended(j, tr, b, iv):
    """``replay_jobs``'s ``finished``: job ``j``'s run ended now (kept in ``tr.runs``); its
    next run, if any, is issued at its due time or now, whichever is later. False when a
    buffer is full."""
    ji, now = tr.ji, iv[_NOW]
    n = iv[_RUNS]
    if n == len(tr.runs):
        iv[_FULL] = _FULL_RUNS
        return False
    tr.runs[n, 0], tr.runs[n, 1], tr.runs[n, 2] = j, ji[_J_ISSUED, j], now
    iv[_RUNS] = n + 1
    k, repeat = ji[_J_RUN, j], ji[_J_REPEAT, j]
    if repeat:
        iv[_RUNS_DONE] += 1
        if k + 1 == repeat:
            iv[_RUNNING] -= 1  # foreground jobs still running
    if k + 1 < repeat or (repeat == 0 and iv[_RUNNING] > 0):
        ji[_J_RUN, j] = k + 1
        return _schedule(b, iv, max(ji[_J_START, j] + (k + 1) * ji[_J_PERIOD, j], now), _ISSUE, j)
    return True


@njit(**_JIT)
def _roots(j, tr):
    """Job ``j``'s transfers nothing holds back, ascending."""
    first = tr.ji[_J_FIRST, j]
    return first + np.flatnonzero(tr.state[_HOLDS, first:first + tr.ji[_J_COUNT, j]] == 0)


@njit(**_JIT)
def _issue(j, tr, net, fl, b, iv):
    """``replay_jobs``'s ``issue``: job ``j``'s next run is issued now, its transfers held
    back as at the start; those nothing holds back launch after the job's launch latency
    (the calendar) or now; a background job's run due once every foreground job has ended is
    not. False when a buffer is full."""
    ji, now = tr.ji, iv[_NOW]
    if ji[_J_REPEAT, j] == 0 and iv[_RUNNING] == 0 and np.any(ji[_J_REPEAT] > 0):
        return True  # a background run due once every foreground job has ended: there is nothing to disturb
    first, count = ji[_J_FIRST, j], ji[_J_COUNT, j]
    ji[_J_ISSUED, j] = now
    if count == 0:  # nothing to run: ended as issued
        return _run_ended(j, tr, b, iv)
    ji[_J_LEFT, j] = count
    ji[_J_OWNER, j] = -1  # the network forgot the run before's listener
    tr.state[_HOLDS, first:first + count] = tr.holds[first:first + count]
    if ji[_J_LAUNCH, j]:
        return _schedule(b, iv, now + ji[_J_LAUNCH, j], _BEGIN, j)
    return _call(b, iv, _W_LAUNCH, _roots(j, tr)) and _drain(tr, net, fl, b, iv)


@njit(**_JIT)
def _drain(tr, net, fl, b, iv):
    """Run the calls on the work list, and the calls they push, depth first as the
    replay's nested calls run; False when a buffer is full."""
    now = iv[_NOW]
    state = tr.state
    while iv[_WORK]:
        iv[_WORK] -= 1
        kind, first, count = b.work[iv[_WORK], 0], b.work[iv[_WORK], 1], b.work[iv[_WORK], 2]
        ids = b.pool[first:first + count]
        ok = True
        if kind == _W_LAUNCH:
            ok = _launch(ids, tr, net, fl, b, iv)
        elif kind == _W_SENT:  # the transfer queued behind each may go
            ok = _release(ids, tr.times[_SENT], now, tr.fol_ptr, tr.fol_idx, state, b, iv)
        elif kind == _W_DELIVERED:
            if len(tr.reduce):  # a reduction delays the data: usable now if it is free, else later
                ok = _work(b, iv, _W_REDUCE_LATER, first, count) and _call(
                    b, iv, _W_USABLE, _where(tr.reduce[ids], _ZERO, ids))
            else:
                ok = _work(b, iv, _W_USABLE, first, count)
        elif kind == _W_USABLE:  # the transfers waiting for their data may go
            iv[_DELIVERED] += count
            ok = _release(ids, tr.times[_DONE], now, tr.dep_ptr, tr.dep_idx, state, b, iv)
            if tr.ji.shape[1] and count:  # a job's calls are its own transfers only
                j = tr.job[ids[0]]
                tr.ji[_J_LEFT, j] -= count
                ok = ok and (tr.ji[_J_LEFT, j] > 0 or _run_ended(j, tr, b, iv))
        else:  # _W_REDUCE_LATER
            delays = tr.reduce[ids]
            for delay in _distinct(delays):
                if delay > 0:
                    ok = ok and _schedule(b, iv, now + delay, _USABLE, _linked(_where(delays, delay, ids), state))
        if not ok:
            return False
    iv[_POOL] = 0
    return True


@njit(**_JIT)
def _complete(due, tr, net, fl, b, iv):
    """``FluidNetwork._complete``: the flows in slots ``due`` (ascending) sent their last
    byte now; report them sent, then delivered now or at their arrival (the calendar)."""
    now = iv[_NOW]
    hops = net.paths.shape[1]
    li, lf, lb = net.li, net.lf, net.lb
    fi, ff = fl.fi, fl.ff
    pad = lf.shape[1] - 1
    count = len(due)
    tags = np.empty(count, dtype=np.int64)
    arrive = np.empty(count, dtype=np.int64)
    for i in range(count):
        s = due[i]
        r = fi[_F_ROW, s]
        rate = ff[_F_RATE, s]
        for h in range(hops):
            link = net.paths[r, h]
            if link != pad:
                lf[_L_BYTES, link] += ff[_F_SIZE, s]
                li[_L_USERS, link] -= 1
                if rate > 0:
                    _listed(lb, _L_GONE, b.per_link[_B_GONE], iv, _GONE, link)
                lf[_L_DELTA, link] += -rate
                _listed(lb, _L_TOUCHED, b.per_link[_B_TOUCHED], iv, _TOUCHED, link)
        _off_lists(s, r, net, fl)
        tags[i] = fi[_F_TAG, s]
        arrive[i] = now + net.latency[r] + net.overhead + fi[_F_DELAY, s]
        fi[_F_ROW, s] = -1
        ff[_F_RATE, s] = 0.0
        ff[_F_LEFT, s] = 0.0
        ff[_F_FINISH, s] = np.inf
        fi[_F_FREE, iv[_FREE_N] + i] = s
    iv[_FREE_N] += count
    iv[_ACTIVE] -= count
    if iv[_ACTIVE] == 0:  # every flow done: slots handed out as a fresh network's (FluidNetwork._complete)
        fi[_F_FREE, :iv[_FREE_N]] = np.sort(fi[_F_FREE, :iv[_FREE_N]])[::-1].copy()
    if not tr.ji.shape[1]:
        return _report(tags, arrive, tr, net, fl, b, iv)
    owners = tr.ji[_J_OWNER][tr.job[tags]]  # each job's run is a listener: reported in the order they are numbered
    for owner in _distinct(owners):
        if not _report(_where(owners, owner, tags), _where(owners, owner, arrive), tr, net, fl, b, iv):
            return False
    return True


@njit(**_JIT)
def _report(tags, arrive, tr, net, fl, b, iv):
    """``FluidNetwork._report``: transfers ``tags`` (of one listener) sent their last byte
    now; delivered now or at ``arrive`` (ps, the calendar)."""
    now = iv[_NOW]
    if not (_call(b, iv, _W_SENT, tags) and _drain(tr, net, fl, b, iv)):
        return False
    times = _distinct(arrive)
    for when in times:
        batch = tags if len(times) == 1 else _where(arrive, when, tags)
        if when == now:
            if not (_call(b, iv, _W_DELIVERED, batch) and _drain(tr, net, fl, b, iv)):
                return False
        elif not _schedule(b, iv, when, _DELIVER, _linked(batch, tr.state)):
            return False
    return True


@njit(**_JIT)
def _settle(tr, net, fl, b, iv, timeline):
    """``FluidNetwork._settle``: finish the flows done by now (and those the reports
    start that are done now too), then rate what changed, once."""
    now = iv[_NOW]
    while _earliest(fl, iv) <= now + SLACK:
        due = np.empty(iv[_HEAP], dtype=np.int64)
        count = 0
        while _earliest(fl, iv) <= now + SLACK:
            due[count] = fl.fi[_F_HEAP, 0]
            _untimed(fl, iv, due[count])
            count += 1
        if not _complete(_sorted(due[:count]), tr, net, fl, b, iv):
            return FULL
    return _reallocate(net, fl, b, iv, timeline)


@njit(**_JIT)
def _set_capacity(links, capacity, net, fl, b, iv):
    """``FluidNetwork.set_capacity`` of links that stay up (a fault that slows them): the
    statistics so far against the old capacity, rates recomputed at this instant."""
    now = iv[_NOW]
    li, lf, lb = net.li, net.lf, net.lb
    eased = False
    for link in links:  # LinkStats.set_capacity: up to now in the old state
        elapsed = now - li[_L_SINCE, link]
        li[_L_SATURATED_PS, link] += elapsed * lb[_L_SATURATED, link]
        li[_L_BUSY_PS, link] += elapsed * lb[_L_BUSY, link]
        li[_L_SINCE, link] = now
        _pair_until(net, link, now)
        if li[_L_REVERSE, link] >= 0:
            _pair_until(net, li[_L_REVERSE, link], now)
    for i in range(len(links)):
        link = links[i]
        lf[_L_CAPACITY, link] = capacity[i]
        lf[_L_IN_FORCE, link] = capacity[i]
    for link in links:
        load = lf[_L_LOAD, link]
        lb[_L_SATURATED, link] = load > 0 and load >= SATURATED * lf[_L_IN_FORCE, link]
        _listed(lb, _L_TOUCHED, b.per_link[_B_TOUCHED], iv, _TOUCHED, link)
        _listed(lb, _L_GONE, b.per_link[_B_GONE], iv, _GONE, link)
        if lb[_L_SLACK, link]:
            lb[_L_MARKED, link] = True
            eased = True
    if eased:  # a slack link bounds the rates of the flows crossing it: rate them anew
        hops = net.paths.shape[1]
        for s in range(iv[_LOGICAL]):
            r = fl.fi[_F_ROW, s]
            if r >= 0:
                for h in range(hops):
                    if lb[_L_MARKED, net.paths[r, h]]:
                        _listed(fl.fb, _F_NEW, b.per_slot[_B_NEW], iv, _NEW, s)
                        break
        for link in links:
            lb[_L_MARKED, link] = False


@njit(**_JIT)
def _reroute(f, dt, net, fl, b, iv):
    """``FluidNetwork._reroute`` for fault ``f``: every route row crossing the links it took
    down takes its detour (``dt``), and so does every flow on one not due now, with the
    bytes it has left: those it sent counted on the old route, its rate off the old links,
    on the new ones from nothing, to be rated anew at this instant."""
    lo, hi = dt.ptr[f], dt.ptr[f + 1]
    if lo == hi:
        return
    detour_of, moved = dt.scratch, net.moved
    for k in range(lo, hi):
        detour_of[dt.rows[k]] = dt.to[k]
    for x in range(len(moved)):  # remap[moved]
        if detour_of[moved[x]] >= 0:
            moved[x] = detour_of[moved[x]]
    now = iv[_NOW]
    hops = net.paths.shape[1]
    li, lf, lb = net.li, net.lf, net.lb
    fi, ff = fl.fi, fl.ff
    pad = lf.shape[1] - 1
    count = 0
    for s in range(iv[_LOGICAL]):  # ascending, as the SimPy network's slots
        r = fi[_F_ROW, s]
        if r < 0 or detour_of[r] < 0 or ff[_F_FINISH, s] <= now + SLACK:  # due now: it ends on its route
            continue
        rate = ff[_F_RATE, s]
        left = ff[_F_LEFT, s] - rate * ((now - fi[_F_SINCE, s]) / PS)
        for h in range(hops):
            link = net.paths[r, h]
            if link != pad:
                lf[_L_BYTES, link] += ff[_F_SIZE, s] - left  # what crossed the old route stays counted there
                lf[_L_DELTA, link] += -rate
                _listed(lb, _L_TOUCHED, b.per_link[_B_TOUCHED], iv, _TOUCHED, link)
                li[_L_USERS, link] -= 1
                if rate > 0:
                    _listed(lb, _L_GONE, b.per_link[_B_GONE], iv, _GONE, link)
        _off_lists(s, r, net, fl)
        fi[_F_ROW, s] = moved[r]
        _on_route(s, moved[r], net, fl)
        ff[_F_SIZE, s] = left
        ff[_F_LEFT, s] = left
        fi[_F_SINCE, s] = now
        ff[_F_RATE, s] = 0.0
        ff[_F_FINISH, s] = np.inf
        _timed(fl, iv, s)
        _listed(fl.fb, _F_NEW, b.per_slot[_B_NEW], iv, _NEW, s)
        dt.lefts[iv[_REROUTED] + count] = left
        count += 1
    for k in range(lo, hi):
        detour_of[dt.rows[k]] = -1
    if count:
        dt.log[iv[_LOGGED], 0] = f
        dt.log[iv[_LOGGED], 1] = count
        iv[_LOGGED] += 1
        iv[_REROUTED] += count


@njit(cache=True, error_model="numpy")
def _run(tr, net, fl, b, iv, dt, start_ps, fault_at, fault_ptr, fault_links, fault_capacity, timeline, pause):
    """Replay to the end (``OK``, ``BEYOND_HORIZON`` or ``FULL``), or for ``pause``
    instants (``PAUSED``; called again, it goes on where it stopped)."""
    if not iv[_STARTED]:
        iv[_STARTED] = 1
        for f in range(len(fault_at)):  # as schedule_faults: those at 0 now, the others on the calendar
            if fault_at[f] == 0:
                _set_capacity(fault_links[fault_ptr[f]:fault_ptr[f + 1]],
                              fault_capacity[fault_ptr[f]:fault_ptr[f + 1]], net, fl, b, iv)
                if dt.cut[f]:
                    return CUT
                _reroute(np.int64(f), dt, net, fl, b, iv)
            elif not _schedule(b, iv, fault_at[f], _FAULT, f):
                return FULL
        if tr.ji.shape[1]:  # each job's first run issued at its start, in job order
            for j in range(tr.ji.shape[1]):
                if not _schedule(b, iv, tr.ji[_J_START, j], _ISSUE, j):
                    return FULL
        elif start_ps == 0:
            if not (_call(b, iv, _W_LAUNCH, np.flatnonzero(tr.state[_HOLDS] == 0)) and _drain(tr, net, fl, b, iv)):
                return FULL
        elif not _schedule(b, iv, start_ps, _BEGIN, _ZERO):
            return FULL
    for _ in range(pause):
        now = iv[_NOW]
        while iv[_EVENTS] and b.events[0, 0] == now:  # this instant's events, in the order they were made
            kind, payload = _next_event(b, iv)
            if kind == _FAULT:
                _set_capacity(fault_links[fault_ptr[payload]:fault_ptr[payload + 1]],
                              fault_capacity[fault_ptr[payload]:fault_ptr[payload + 1]], net, fl, b, iv)
                if dt.cut[payload]:
                    return CUT
                _reroute(payload, dt, net, fl, b, iv)
                continue
            if kind == _ISSUE:
                if not _issue(payload, tr, net, fl, b, iv):
                    return FULL
                continue
            if kind == _BEGIN:
                call, ids = _W_LAUNCH, _roots(payload, tr) if tr.ji.shape[1] else np.flatnonzero(tr.state[_HOLDS] == 0)
            else:
                call = _W_DELIVERED if kind == _DELIVER else _W_USABLE if kind == _USABLE else _W_LAUNCH
                ids = _unlinked(payload, tr.state)
            if not (_call(b, iv, call, ids) and _drain(tr, net, fl, b, iv)):
                return FULL
        code = _settle(tr, net, fl, b, iv, timeline)
        if code != OK:
            return code
        following = b.events[0, 0] if iv[_EVENTS] else -1
        if iv[_ACTIVE] and (following < 0 or iv[_WAKE] < following):
            following = iv[_WAKE]
        if following < 0:
            return OK
        iv[_NOW] = following
    return PAUSED


def run(state: np.ndarray, times: np.ndarray, floats: np.ndarray, *, local: np.ndarray,
        gate: np.ndarray, reduce: np.ndarray, dependents: tuple[np.ndarray, np.ndarray],
        followers: tuple[np.ndarray, np.ndarray], paths: np.ndarray, latency: np.ndarray, capacity: np.ndarray,
        slack: np.ndarray, reverse: np.ndarray, overhead_ps: int, start_ps: int,
        faults: list[tuple[int, np.ndarray, np.ndarray]], slots: int, timeline: bool,
        detours: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
        report: Callable[[int], None] | None = None, jobs: np.ndarray | None = None,
        paused: Callable[[int, int], None] | None = None) -> tuple[int, dict]:
    """Replay one schedule from the replay's per-transfer ``state`` (rows ``STATE``),
    ``times`` (start, sent, delivered ps; filled in) and ``floats`` (wire bytes, rate cap
    B/s, inf: none): ``local`` (joins), ``gate`` and ``reduce`` ps (empty: none), who waits for
    each one's delivery and who queues behind it (CSR ptr, idx); the network's ``paths``
    (routes x hops, padded with ``len(capacity)``), ``latency`` (ps per route), ``capacity``
    (B/s per directed link), ``slack`` (links no allocation can fill), ``reverse``, as the
    SimPy network has them; ``faults``: (ps, links, B/s from then on) in the order
    ``schedule_faults`` applies them; ``slots``: ``slot_bound`` of the flows; ``detours``:
    for faults that take links down, per fault (CSR ptr) the route rows crossing them and
    their detours' rows (``FluidNetwork.detour``: ``paths`` and ``latency`` hold them), and
    whether the fault leaves a route none (then the run stops there with ``CUT``); ``report``
    (``simnet.engine.progress.Reporter``): told the transfers delivered (with ``jobs``: the
    foreground runs finished) every ``PAUSE_INSTANTS`` instants, if it has a listener;
    ``paused`` likewise, told the transfers delivered and the foreground runs finished (it
    may raise, to stop the run).

    ``jobs`` (a row per job: first transfer, transfers, launch latency ps, first issue ps,
    runs or 0 for a background job, period ps) replays the transfers as the jobs of
    ``simnet.engine.replay.replay_jobs``, each job's runs one after the other on its own
    consecutive transfers, rather than as one schedule (``start_ps`` is then unused).

    Returns (``OK``, ``BEYOND_HORIZON`` or ``CUT``; the links' statistics by
    ``LinkStats.adopt``'s names, with ``timeline``, ``(ps, links, loads)`` per change, when
    asked, ``rerouted``/``rerouted_bytes`` as the SimPy network counts them, and with
    ``jobs``, ``runs``: a row per run in the order they ended, (job, issued ps, end ps))."""
    links = len(capacity)
    n = state.shape[1]
    hops = paths.shape[1]
    pad_slack = np.append(np.asarray(slack, dtype=bool), False)
    paths = np.ascontiguousarray(paths, dtype=np.int64)
    tight = np.where(pad_slack[paths], links, paths)
    at = np.array([when for when, _, _ in faults], dtype=np.int64)
    fault_ptr = np.cumsum([0] + [len(changed) for _, changed, _ in faults]).astype(np.int64)
    fault_links = np.concatenate([np.asarray(f, dtype=np.int64) for _, f, _ in faults] + [np.zeros(0, np.int64)])
    fault_capacity = np.concatenate([np.asarray(c, dtype=float) for _, _, c in faults] + [np.zeros(0)])
    holds = state[_HOLDS].copy()
    ptr, crossing, to, cut = detours if detours is not None else (
        np.zeros(len(faults) + 1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
        np.zeros(len(faults), dtype=np.int64))
    moving = len(crossing) > 0
    job_rows = np.zeros((0, 6), dtype=np.int64) if jobs is None else np.asarray(jobs, dtype=np.int64)
    job_of = np.repeat(np.arange(len(job_rows), dtype=np.int64), job_rows[:, 1])
    # one type for the dependency lists whoever built them (a schedule's are int32, jobs' int64):
    # numba compiles ``_run`` once per signature, ~25 s of CPU on a fresh install
    dependents, followers = ((np.asarray(ptr, dtype=np.int64), np.asarray(idx, dtype=np.int32))
                             for ptr, idx in (dependents, followers))
    sizes = dict(FIRST_SIZES)
    if timeline:  # as many as the run will likely need: a full buffer starts the whole run over
        sizes[_FULL_COMMITS] = max(sizes[_FULL_COMMITS], min(TIMELINE_PER_TRANSFER[0] * n, TIMELINE_FIRST_MOST[0]))
        sizes[_FULL_LOADS] = max(sizes[_FULL_LOADS], min(TIMELINE_PER_TRANSFER[1] * n, TIMELINE_FIRST_MOST[1]))
    # the foreground runs asked, and as many of the background's (more: the buffer doubles and
    # the run starts over, as a full buffer of any kind does)
    sizes[_FULL_RUNS] = max(sizes[_FULL_RUNS], 2 * int(job_rows[:, 4].sum()) + 64)
    while True:
        state[_HOLDS] = holds
        times[:] = -1
        tr = Transfers(state, times, floats, np.stack([np.asarray(local, dtype=bool), np.zeros(n, dtype=bool)]),
                       np.asarray(gate, dtype=np.int64), np.asarray(reduce, dtype=np.int64),
                       *dependents, *followers, job_of,
                       np.vstack([job_rows.T, np.zeros((3, len(job_rows)), np.int64), np.full((1, len(job_rows)), -1)]),
                       holds, np.zeros((sizes[_FULL_RUNS] if len(job_rows) else 0, 3), dtype=np.int64))
        li = np.zeros((12, links + 1), dtype=np.int64)
        li[[_L_HEAD, _L_LOCAL]] = -1
        li[_L_REVERSE, :links] = reverse
        li[_L_REVERSE, links] = -1
        lf = np.zeros((8, links + 1))
        lf[_L_CAPACITY] = lf[_L_IN_FORCE] = np.append(np.asarray(capacity, dtype=float), np.inf)
        lb = np.zeros((8, links + 1), dtype=np.bool_)
        lb[_L_SLACK] = pad_slack
        net = Network(paths, tight, np.asarray(latency, dtype=np.int64), np.arange(len(paths), dtype=np.int64), li, lf,
                      lb, np.int64(overhead_ps))
        dt = Detours(np.asarray(ptr, dtype=np.int64), np.asarray(crossing, dtype=np.int64),
                     np.asarray(to, dtype=np.int64), np.asarray(cut, dtype=np.int64),
                     np.full(len(paths) if moving else 0, -1, dtype=np.int64),
                     np.zeros(len(faults) * slots if moving else 0), np.zeros((len(faults), 2), dtype=np.int64))
        fi = np.zeros((7, slots), dtype=np.int64)
        fi[[_F_ROW, _F_POS]] = -1
        ff = np.zeros((5, slots))
        ff[_F_FINISH] = np.inf
        fl = Flows(fi, ff, np.zeros((2, slots), dtype=np.bool_), np.full((2, slots * hops), -1, dtype=np.int64))
        kept = sizes[_FULL_COMMITS] if timeline else 0
        b = Buffers(np.zeros((sizes[_FULL_EVENTS], 4), dtype=np.int64), np.zeros((sizes[_FULL_WORK], 3), np.int64),
                    np.zeros(sizes[_FULL_POOL], dtype=np.int64), np.zeros((4, slots), dtype=np.int64),
                    np.zeros((4, links + 1), dtype=np.int64), np.zeros(slots * hops, dtype=np.int64),
                    np.zeros((2, kept), dtype=np.int64), np.zeros(sizes[_FULL_LOADS] if timeline else 0, np.int64),
                    np.zeros(sizes[_FULL_LOADS] if timeline else 0))
        iv = np.zeros(24, dtype=np.int64)
        iv[_WAKE] = -1
        iv[_RUNNING] = np.count_nonzero(job_rows[:, 4])
        listened = report is not None and report.listened
        args = (tr, net, fl, b, iv, dt, np.int64(start_ps), at, fault_ptr, fault_links, fault_capacity, timeline,
                np.int64(PAUSE_INSTANTS if listened or paused is not None else 2**62))
        _compiled_for(args)
        code = _run(*args)
        while code == PAUSED:
            if paused is not None:
                paused(int(iv[_DELIVERED]), int(iv[_RUNS_DONE]))
            if listened:
                report(int(iv[_RUNS_DONE] if len(job_rows) else iv[_DELIVERED]))
            code = _run(*args)
        if code != FULL:
            break
        if iv[_FULL] == _FULL_SLOTS:
            raise RuntimeError("the compiled fluid network ran out of flow slots: slot_bound was too low")
        sizes[int(iv[_FULL])] *= 2  # start again with the full buffer doubled
        if report is not None:
            report.again()
    stats = {"bytes": lf[_L_BYTES, :links], "load": lf[_L_LOAD, :links], "in_force": lf[_L_IN_FORCE, :links],
             "peak": lf[_L_PEAK, :links], "flows": li[_L_FLOWS, :links], "saturated_ps": li[_L_SATURATED_PS, :links],
             "busy_ps": li[_L_BUSY_PS, :links], "either_ps": li[_L_EITHER_PS, :links],
             "max_flows": li[_L_MAX_FLOWS, :links], "since": li[_L_SINCE, :links],
             "pair_since": li[_L_PAIR_SINCE, :links], "saturated": lb[_L_SATURATED, :links],
             "busy": lb[_L_BUSY, :links], "pair_saturated": lb[_L_PAIR_SATURATED, :links],
             "rerouted": int(iv[_REROUTED]), "rerouted_bytes": 0.0}
    if len(job_rows):
        stats["runs"] = tr.runs[:iv[_RUNS]].copy()
    first = 0
    for count in dt.log[:iv[_LOGGED], 1].tolist():  # as FluidNetwork._reroute adds them, a fault at a time
        stats["rerouted_bytes"] += float(dt.lefts[first:first + count].sum())
        first += count
    if timeline:
        counts = b.tl[1, :iv[_COMMITS]]
        ends = np.cumsum(counts)
        stats["timeline"] = [(int(when), b.tl_link[end - k:end].copy(), b.tl_load[end - k:end].copy())
                             for when, k, end in zip(b.tl[0, :iv[_COMMITS]].tolist(), counts.tolist(), ends.tolist())]
    return int(code), stats


def loaded() -> bool:
    """Whether this process has compiled or loaded the replay already (using it again costs
    nothing more)."""
    return bool(_run.overloads)


def _compiled_for(args: tuple) -> None:
    """Compile ``_run`` for these arguments' types, or load it from numba's cache, one
    process of this install at a time: processes started together on a fresh install (sweep
    workers, test workers) compile it once and the others load what it cached, instead of
    each compiling it (~25 s of CPU each)."""
    signature = tuple(numba.typeof(arg) for arg in args)
    if signature in _run.overloads:
        return
    lock = Path(tempfile.gettempdir()) / f"simnet-compiled-{hashlib.sha1(__file__.encode()).hexdigest()[:12]}.lock"
    try:
        import fcntl

        handle = open(lock, "a")
    except (ImportError, OSError):  # no POSIX locks or no temporary folder: each process on its own
        _compile(signature)
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _compile(signature)


def _compile(signature: tuple) -> None:
    """``_run.compile``; a cache numba cannot read (written by another version of this
    module, whose types it no longer has) is dropped and the functions compiled anew."""
    try:
        _run.compile(signature)
    except Exception:  # noqa: BLE001 - whatever the stale cache raises, compiling afresh is the cure
        for function in globals().values():
            if isinstance(function, numba.core.registry.CPUDispatcher) and function._cache is not None:
                function._cache.flush()
        _run.compile(signature)


def slot_bound(queues: np.ndarray) -> int:
    """Slots enough for ``FluidNetwork``'s numbering of the flows when at most one flow of
    each of ``queues`` (``simnet.engine.replay``'s queues of the transfers that cross links)
    runs at once: the network grows its slots to at most twice the flows at once, or by 64."""
    return 2 * len(np.unique(queues)) + 64
