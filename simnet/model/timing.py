"""What a performance model says of a schedule: how its transfers are timed on the network."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Timing:
    """How one schedule is timed (arrays indexed like the schedule's transfers; for a
    ``LaneProgram``, ``simnet.engine.lanes``, like its lanes).

    ``capacity``: B/s per directed link (None: the topology's); ``wire_factor``: bytes a
    transfer occupies on its links per data byte (a protocol's flags and headers);
    ``rate_cap``: B/s bound on a transfer's own rate (None: none);
    ``delay_ps``: software latency added to its delivery (None: none); ``start_ps``: when
    the collective's first transfers may start (a launch latency).

    ``wire_factor`` and ``start_ps`` are one value for every transfer, except for lane
    programs merged from groups timed apart (``simnet.run.simulate``'s groups), whose
    ``replay_lanes`` takes an array of one per lane; the transfer-by-transfer ``replay``
    takes one value only.
    """

    capacity: np.ndarray | None = None
    wire_factor: float | np.ndarray = 1.0
    rate_cap: np.ndarray | None = None
    delay_ps: np.ndarray | None = None
    start_ps: int | np.ndarray = 0

    def select(self, index: np.ndarray) -> Timing:
        """This timing, indexed like lanes (or transfers), for the lanes ``index`` names, in
        its order: the timing of a part of a lane program, or with one lane index per
        transfer, of the transfers its ``to_schedule`` holds. ``capacity`` is per link: kept."""
        def pick(values):
            return values if values is None or np.ndim(values) == 0 else np.asarray(values)[index]

        return Timing(capacity=self.capacity, wire_factor=pick(self.wire_factor), rate_cap=pick(self.rate_cap),
                      delay_ps=pick(self.delay_ps), start_ps=pick(self.start_ps))
