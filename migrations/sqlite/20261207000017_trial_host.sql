-- What the host was doing while a local trial ran (JSON, wire's JsonHostFacts: kernel, CPU model, CPUs
-- online, the trial's own CPU from its control group, other processes' CPU, steal, load, throttling).
-- NULL for cluster jobs, imports and trials stored before it existed.
ALTER TABLE trials ADD COLUMN host_facts TEXT;
