"""A data-parallel training step: compute, gradient buckets, and the communication left exposed.

Model (PyTorch DDP style): a step computes for ``C`` seconds on each GPU, the last
``backward_fraction`` of it being the backward pass. The gradient of ``G`` bytes is cut
into buckets of ``bucket_size`` (the last one smaller); bucket i is ready when the
backward pass has produced its share, at ``C*(1 - f) + C*f*(i+1)/B``, and the buckets
are AllReduced one after another on one stream, each taking its simulated time. So

    T_iter(N) = max(C, finish of the last bucket's AllReduce),   T_iter(1) = C,

speedup(N) = N * T_iter(1) / T_iter(N) (weak scaling: every GPU keeps its batch), and
scaling efficiency = speedup / N. Without ``bucket_size`` the whole gradient is one bucket
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

from dataclasses import dataclass

__all__ = ["StepModel", "DTYPE_BYTES", "MAX_BUCKETS"]

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

MAX_BUCKETS = 100_000
"""Most gradient buckets a step may have (1 GiB in 10 KiB buckets); a step walks them one by one."""


@dataclass(frozen=True)
class StepModel:
    """One training step: compute seconds, gradient bytes, optional bucket bytes."""

    compute_s: float
    gradient_bytes: int
    bucket_bytes: int | None = None
    backward_fraction: float = 2 / 3

    @classmethod
    def from_workload(cls, workload) -> StepModel:
        """From a scenario's ``workload:`` (compute from FLOPs, gradient from parameters)."""
        compute = workload.compute_time
        if compute is None:
            compute = workload.model_flops / workload.gpu_flops
        gradient = workload.gradient_size
        if gradient is None:
            gradient = int(workload.parameters * DTYPE_BYTES[workload.dtype])
        return cls(compute, int(gradient), workload.bucket_size, workload.backward_fraction)

    def buckets(self) -> list[int]:
        """Bucket sizes in bytes, in the order the backward pass produces them."""
        if not self.bucket_bytes or self.bucket_bytes >= self.gradient_bytes:
            return [self.gradient_bytes]
        full, rest = divmod(self.gradient_bytes, self.bucket_bytes)
        return [self.bucket_bytes] * full + ([rest] if rest else [])

    def iteration_time(self, allreduce_s: dict[int, float], gpus: int = 2) -> float:
        """Step time given the AllReduce time of each distinct bucket size (seconds)."""
        if gpus <= 1:
            return self.compute_s
        buckets = self.buckets()
        forward = self.compute_s * (1 - self.backward_fraction)
        backward = self.compute_s * self.backward_fraction
        finish = 0.0
        for i, size in enumerate(buckets):
            ready = forward + backward * (i + 1) / len(buckets)
            finish = max(finish, ready) + allreduce_s[size]
        return max(self.compute_s, finish)

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
        return {"gpus": gpus, "compute_s": self.compute_s, "iteration_time_s": iteration,
                "communication_exposed_s": round(iteration - self.compute_s, 15), "speedup": speedup,
                "efficiency": speedup / gpus}
