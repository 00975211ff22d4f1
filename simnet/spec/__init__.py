"""What a user writes: the scenario schema, its options, jobs, workloads and conditions
(faults, stragglers), validated against the topology they run on."""
