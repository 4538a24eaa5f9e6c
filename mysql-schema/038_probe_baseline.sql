-- Migration 38: probe slowdown baselines (t_expected, `iosonar slowdown
-- baseline`; Kunkel & Betke §3.3: the median latency of each probe op over a
-- long baseline, 30-60 days). One row per (baseline, file system, probing
-- host, op); host '' is the file system's row over every probing host.
-- `slowdown` and `report` read the newest baseline unless told which.

CREATE TABLE IF NOT EXISTS probe_baseline (
  name            VARCHAR(128) NOT NULL,       -- default FROM..TO of the history
  fs              VARCHAR(255) NOT NULL,       -- lustre.fs, else the probed directory
  host            VARCHAR(255) NOT NULL DEFAULT '',  -- '' = every probing host
  op              VARCHAR(32) NOT NULL,        -- the probe op (create, write, read, ...)
  median_s        DOUBLE NOT NULL,             -- median latency, seconds (type 7 quantile)
  samples         BIGINT UNSIGNED NOT NULL,    -- successful probe ops it is the median of
  history_from    DATETIME(6) NOT NULL,        -- UTC, for people
  history_to      DATETIME(6) NOT NULL,
  computed_at     DATETIME(6) NOT NULL,
  history_from_ns BIGINT NOT NULL,             -- the same instants, exactly
  history_to_ns   BIGINT NOT NULL,
  computed_at_ns  BIGINT NOT NULL,
  PRIMARY KEY (name, fs, host, op),
  KEY by_time (computed_at_ns)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
