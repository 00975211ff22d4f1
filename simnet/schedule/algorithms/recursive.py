"""Recursive doubling and Rabenseifner's halving-doubling, for any N.

For N not a power of two, p = 2^floor(lg N) and r = N - p; the first r even ranks 2i
fold into their odd neighbours 2i+1, the p remaining ranks run the power-of-two
algorithm, then each 2i+1 copies the result back to 2i (Thakur, Rabenseifner & Gropp,
"Optimization of Collective Communication Operations in MPICH", 2005, section 4.4):

* recursive doubling folds the whole buffer: 2i sends it to 2i+1;
* halving-doubling folds as Rabenseifner does, by halves: 2i sends its upper half to
  2i+1 while 2i+1 sends its lower half to 2i, each adds the half it got, then 2i sends
  its reduced lower half to 2i+1 (each of the pair reduces half the buffer).

Both follow a rendezvous: a rank sends a round's data only once its partner has finished
the previous round too (as MPI's large-message protocol waits for the receiver to post its
buffer). Recursive doubling needs it, since each round's message adds into the very buffer
the partner is about to send; halving-doubling's rounds would be correct sent eagerly, but
where few ranks fold (N = 5, 9, 10, 11), the ranks that did not fold ran ahead and sent
their later rounds into a folding rank's port beside the round it waited for, 40-51 % over
the closed form under ``model: ideal`` (fuzz round am), which the rendezvous keeps.
"""

from __future__ import annotations

import numpy as np

from simnet.schedule.registry import register
from simnet.schedule.transfers import COPY, REDUCE, Schedule, ScheduleBuilder
from simnet.topology.graph import Topology

__all__ = ["recursive_doubling", "halving_doubling", "recursive_doubling_part", "halving_doubling_part"]


def _fold_whole(b: ScheduleBuilder, members: np.ndarray, evens: np.ndarray, lo: int, hi: int,
                ready: np.ndarray, channel: int) -> np.ndarray:
    """Each even rank 2i adds its whole buffer into 2i+1; returns the ids completing 2i+1."""
    folded = b.add(members[evens], members[evens + 1], lo, hi, REDUCE, deps=[ready[evens], ready[evens + 1]],
                   step=0, channel=channel)
    # a folded-in rank is final once its own data and its partner's are in
    return b.join(members[evens + 1], np.stack([folded, ready[evens + 1]], axis=1))


def _fold_halves(b: ScheduleBuilder, members: np.ndarray, evens: np.ndarray, lo: int, hi: int,
                 ready: np.ndarray, channel: int) -> np.ndarray:
    """Rabenseifner's fold: the pair exchange halves and each adds one, then 2i sends its
    reduced lower half to 2i+1; returns the ids completing 2i+1."""
    middle = lo + (hi - lo) // 2
    odds = evens + 1
    both = [ready[evens], ready[odds]]
    up = b.add(members[evens], members[odds], middle, hi, REDUCE, deps=both, step=0, channel=channel)
    down = b.add(members[odds], members[evens], lo, middle, REDUCE, deps=both, step=0, channel=channel)
    lower = b.add(members[evens], members[odds], lo, middle, COPY, deps=[down], after_sent=up, step=0,
                  channel=channel)
    return b.join(members[odds], np.stack([up, lower, ready[odds]], axis=1))


def _fold(b: ScheduleBuilder, members: np.ndarray, lo: int, hi: int, ready: np.ndarray, channel: int, fold):
    """Fold the extra ranks in with ``fold``; returns (active member positions, ready id per active, p, r)."""
    n = len(members)
    p = 1 << (n.bit_length() - 1)
    r = n - p
    active = np.concatenate([np.arange(1, 2 * r, 2), np.arange(2 * r, n)]).astype(np.int64)
    active_ready = ready[active].copy()
    if r:
        active_ready[:r] = fold(b, members, np.arange(0, 2 * r, 2), lo, hi, ready, channel)
    return active, active_ready, p, r


def _unfold(b: ScheduleBuilder, members: np.ndarray, lo: int, hi: int, active: np.ndarray, final: np.ndarray,
            r: int, step: int, channel: int) -> np.ndarray:
    """Copy the result back to the folded ranks; returns (n, D) completion ids."""
    n = len(members)
    width = max(final.shape[1], 1)
    done = np.full((n, width), -1, dtype=np.int64)
    done[active, : final.shape[1]] = final
    if r:
        evens = np.arange(0, 2 * r, 2)
        back = b.add(members[evens + 1], members[evens], lo, hi, COPY, deps=list(final[:r].T), step=step,
                     channel=channel)
        done[evens, 0] = back
    return done


def _folded(exchange, fold):
    """An AllReduce part for any N from ``exchange(b, nodes, lo, hi, ready, channel) ->
    (final ids, steps)`` that works on a power-of-two ``nodes``: fold, exchange, unfold."""

    def part(b: ScheduleBuilder, members: np.ndarray, lo: int, hi: int, ready: np.ndarray,
             chunk_size: int | None = None, channel: int = 0) -> np.ndarray:
        ready = np.asarray(ready, dtype=np.int64)
        if len(members) == 1:
            return ready.reshape(1, 1)
        active, current, _, r = _fold(b, members, lo, hi, ready, channel, fold)
        final, steps = exchange(b, members[active], lo, hi, current, channel)
        return _unfold(b, members, lo, hi, active, final[:, None], r, 1 + steps, channel)

    part.__doc__ = exchange.__doc__
    return part


def _partner_sums(b: ScheduleBuilder, nodes: np.ndarray, lo: int, hi: int, current: np.ndarray,
                  channel: int) -> tuple[np.ndarray, int]:
    """lg p rounds in which partners at distance 2^d exchange and add their whole buffers."""
    p = len(nodes)
    rounds, me = p.bit_length() - 1, np.arange(p)
    for d in range(rounds):
        partner = me ^ (1 << d)
        sent = b.add(nodes, nodes[partner], lo, hi, REDUCE, deps=[current, current[partner]], step=d + 1,
                     channel=channel)
        # a node is final for this round once its own data and its partner's message are in
        current = b.join(nodes, np.stack([current, sent[partner]], axis=1))
    return current, rounds


def _halve_then_double(b: ScheduleBuilder, nodes: np.ndarray, lo: int, hi: int, current: np.ndarray,
                       channel: int) -> tuple[np.ndarray, int]:
    """Recursive-halving reduce-scatter, then recursive-doubling all-gather (Rabenseifner)."""
    p = len(nodes)
    rounds, me = p.bit_length() - 1, np.arange(p)
    region_lo, region_hi = np.full(p, lo, dtype=np.int64), np.full(p, hi, dtype=np.int64)
    history = []  # partners per round, replayed backwards by the all-gather
    for d in range(rounds):
        bit = p >> (d + 1)
        partner = me ^ bit
        middle = region_lo + (region_hi - region_lo) // 2
        keep_low = (me & bit) == 0
        send_lo = np.where(keep_low, middle, region_lo)
        send_hi = np.where(keep_low, region_hi, middle)
        # rendezvous: a round's message leaves once the partner has finished the round before (and so its
        # fold, which overwrites its lower half), as MPI's large-message protocol waits for the receive
        sent = b.add(nodes, nodes[partner], send_lo, send_hi, REDUCE, deps=[current, current[partner]], step=1 + d,
                     channel=channel)
        current = b.join(nodes, np.stack([current, sent[partner]], axis=1))
        region_lo = np.where(keep_low, region_lo, middle)
        region_hi = np.where(keep_low, middle, region_hi)
        history.append(partner)
    for d, partner in enumerate(reversed(history)):
        sent = b.add(nodes, nodes[partner], region_lo, region_hi, COPY, deps=[current], step=1 + rounds + d,
                     channel=channel)
        current = b.join(nodes, np.stack([current, sent[partner]], axis=1))
        region_lo = np.minimum(region_lo, region_lo[partner])
        region_hi = np.maximum(region_hi, region_hi[partner])
    return current, 2 * rounds


recursive_doubling_part = _folded(_partner_sums, _fold_whole)
halving_doubling_part = _folded(_halve_then_double, _fold_halves)


@register("halving_doubling",
          "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling all-gather",
          "2*lg(N)*L + 2*(N-1)/N * S/B for N a power of two through one switch; "
          "+ 3*L + 2*S/B for the fold otherwise (halves exchanged, lower half sent on, result copied back)")
def halving_doubling(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Halving-doubling. Contention-free, N a power of two: ``2 lg(N) L + 2 (N-1)/N S/B``."""
    b = ScheduleBuilder("halving_doubling", ranks, size)
    halving_doubling_part(b, np.arange(len(ranks)), 0, size, np.full(len(ranks), -1))
    return b.build()


@register("recursive_doubling", "lg N rounds: partners at distance 1, 2, 4, ... exchange and add the full buffer",
          "lg(N) * (L + S/B) for N a power of two; + 2*(L + S/B) for the fold otherwise")
def recursive_doubling(topology: Topology, ranks: list[str], size: int) -> Schedule:
    """Recursive doubling. Contention-free, N a power of two: ``lg(N) * (L + S/B)``."""
    b = ScheduleBuilder("recursive_doubling", ranks, size)
    recursive_doubling_part(b, np.arange(len(ranks)), 0, size, np.full(len(ranks), -1))
    return b.build()
