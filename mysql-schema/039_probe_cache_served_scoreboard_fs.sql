-- Migration 39: what the baseline file and the JSON already had, in the job
-- database too.
--
-- probe_baseline.cache_served: the data-op samples of (fs, host, op) left out
-- of the median as served by the page cache (a read or write faster than the
-- device's plausible floor; Kunkel & Betke §3.1, §4.6). Rows written before
-- this migration have 0.
ALTER TABLE probe_baseline ADD COLUMN IF NOT EXISTS cache_served BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER samples;

-- scoreboard.fs: the storage system a board ranks the traffic to (TOKIO
-- §IV-B): '' is every traced byte (the rows before this migration), else a
-- file system's name from the health records' mounts, 'node-local' or 'no
-- mount record' (node_local = 1 for node-local mounts); period_jobs is then
-- the jobs with traffic to it.
ALTER TABLE scoreboard ADD COLUMN IF NOT EXISTS fs VARCHAR(255) NOT NULL DEFAULT '' AFTER period_to;
ALTER TABLE scoreboard ADD COLUMN IF NOT EXISTS node_local TINYINT(1) NOT NULL DEFAULT 0 AFTER fs;
ALTER TABLE scoreboard DROP PRIMARY KEY, ADD PRIMARY KEY (cluster, period_from, period_to, fs, who, metric, rank_no);
