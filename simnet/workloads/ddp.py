"""A data-parallel training step: compute, gradient buckets, and the communication left exposed.

Model (PyTorch DDP style): a step computes for ``C`` seconds on each GPU, the last
``backward_fraction`` of it being the backward pass. The gradient of ``G`` bytes is cut
into buckets of ``bucket_size`` (the last one smaller); bucket i is ready when the
backward pass has produced its share, at ``C*(1 - f) + C*f*(i+1)/B``, and the buckets
are AllReduced one after another on one stream, each taking its simulated time. So

    T_iter(N) = max(C, finish of the last bucket's AllReduce),   T_iter(1) = C,

speedup(N) = N * T_iter(1) / T_iter(N) (weak scaling: every GPU keeps its batch), and
scaling efficiency = speedup / N. A GPU that computes ``s`` times slower (``compute_slowdown``)
holds every bucket back: the buckets are ready at the slowest GPU's pace, ``C`` becomes
``s C`` in the formula above; what the communication's slack absorbs of the ``(s - 1) C``
it loses is reported. Without ``bucket_size`` the whole gradient is one bucket
that starts when the backward pass ends: T_iter = C + T_allreduce(G).

>>> w = StepModel(compute_s=0.1, gradient_bytes=100, bucket_bytes=50, backward_fraction=0.5)
>>> w.buckets()
[50, 50]
>>> round(w.iteration_time({50: 0.02}), 9)   # buckets ready at 75 and 100 ms; the last ends at 120 ms
0.12
>>> round(w.speedup(8, {50: 0.02}), 3)
6.667
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simnet.units import DTYPE_BYTES

__all__ = ["StepModel", "MAX_BUCKETS"]


MAX_BUCKETS = 100_000
"""Most gradient buckets a step may have (1 GiB in 10 KiB buckets); a step walks them one by one."""


@dataclass(frozen=True)
class StepModel:
    """One training step: compute seconds, gradient bytes, optional bucket bytes."""

    compute_s: float
    gradient_bytes: int
    bucket_bytes: int | None = None
    backward_fraction: float = 2 / 3
    slowest: float = 1.0  # the slowest GPU's compute time over a healthy GPU's (a straggler)

    @classmethod
    def from_workload(cls, workload, gpus: list[str] | None = None) -> StepModel:
        """From a scenario's ``workload:`` (compute from FLOPs, gradient from parameters);
        ``gpus``: the run's GPUs, whose ``compute_slowdown`` factors count (default: all given)."""
        compute = workload.compute_time
        if compute is None:
            compute = workload.model_flops / workload.gpu_flops
        gradient = workload.gradient_size
        if gradient is None:
            gradient = int(workload.parameters * DTYPE_BYTES[workload.dtype])
        factors = workload.compute_slowdown or {}
        slowest = max((f for g, f in factors.items() if gpus is None or g in gpus), default=1.0)
        return cls(compute, int(gradient), workload.bucket_size, workload.backward_fraction, slowest)

    def buckets(self) -> list[int]:
        """Bucket sizes in bytes, in the order the backward pass produces them."""
        if not self.bucket_bytes or self.bucket_bytes >= self.gradient_bytes:
            return [self.gradient_bytes]
        full, rest = divmod(self.gradient_bytes, self.bucket_bytes)
        return [self.bucket_bytes] * full + ([rest] if rest else [])

    def iteration_time(self, allreduce_s: dict[int, float], gpus: int = 2) -> float:
        """Step time given the AllReduce time of each distinct bucket size (seconds)."""
        compute = self.compute_s * self.slowest  # a bucket is AllReduced once the slowest GPU has it
        if gpus <= 1:  # nothing to exchange: the one GPU's compute, at its own pace
            return compute
        buckets = self.buckets()
        forward = compute * (1 - self.backward_fraction)
        backward = compute * self.backward_fraction
        finish = 0.0
        for i, size in enumerate(buckets):  # the last is ready as the backward pass ends: compute, to the bit
            ready = compute if i + 1 == len(buckets) else forward + backward * (i + 1) / len(buckets)
            finish = max(finish, ready) + allreduce_s[size]
        return max(compute, finish)

    def speedup(self, gpus: int, allreduce_s: dict[int, float]) -> float:
        """N * T_iter(1) / T_iter(N)."""
        return gpus * self.compute_s / self.iteration_time(allreduce_s, gpus)

    def summary(self, gpus: int, allreduce_s: dict[int, float]) -> dict:
        """The figures a report shows for one algorithm: compute, iteration and exposed
        communication (seconds), speedup and efficiency.

        >>> StepModel(0.1, 100, 50, 0.5).summary(8, {50: 0.02})["communication_exposed_s"]
        0.02
        """
        iteration = self.iteration_time(allreduce_s, gpus)
        speedup = gpus * self.compute_s / iteration
        summary = {"gpus": gpus, "compute_s": self.compute_s, "iteration_time_s": iteration,
                   "communication_exposed_s": round(iteration - self.compute_s * self.slowest, 15),
                   "speedup": speedup, "efficiency": speedup / gpus}
        if self.slowest > 1:
            healthy = replace(self, slowest=1.0).iteration_time(allreduce_s, gpus)
            late = self.compute_s * (self.slowest - 1)
            summary.update(slowest_compute=self.slowest, straggler_cost_s=iteration - healthy,  # (no float residue)
                           straggler_absorbed_s=round(max(late - (iteration - healthy), 0.0), 15))
        return summary
