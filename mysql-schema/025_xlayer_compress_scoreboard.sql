-- Migration 25 (every analysis subcommand writes its results to the
-- job database): the cross-layer view of a job (`iosonar xlayer`) with one row
-- per server the job used and its share of that server's load, the
-- second-pass compression report (`iosonar compress2`), and the scoreboard of
-- a period (`iosonar scoreboard`). Each write replaces the previous
-- computation for the same key in one transaction.

-- One row per job: the latest cross-layer view (definitions:
-- analysis-jobs/xlayer/xlayer.h).
CREATE TABLE IF NOT EXISTS job_xlayer (
  cluster         VARCHAR(64) NOT NULL,
  job_id          BIGINT UNSIGNED NOT NULL,
  computed_at     DATETIME(6) NOT NULL,
  window_start    DATETIME(6) NOT NULL,       -- UTC, the job's window [start, end)
  window_end      DATETIME(6) NOT NULL,
  window_source   VARCHAR(16) NOT NULL,       -- maps (job database / --maps) or trace
  nodes           INT UNSIGNED NOT NULL,
  unmapped_nodes  INT UNSIGNED NOT NULL,      -- nodes without a forwarding node
  files           INT UNSIGNED NOT NULL,
  trace_records   BIGINT UNSIGNED NOT NULL,
  job_bytes       BIGINT UNSIGNED NOT NULL,   -- read + written by the job (trace)
  job_read_bytes  BIGINT UNSIGNED NOT NULL,
  job_write_bytes BIGINT UNSIGNED NOT NULL,
  job_opens       BIGINT UNSIGNED NOT NULL,
  job_stats       BIGINT UNSIGNED NOT NULL,
  job_meta_ops    BIGINT UNSIGNED NOT NULL,
  fs_bytes        DOUBLE NOT NULL,            -- all OSTs' bytes over the window
  fs_opens        DOUBLE NOT NULL,            -- mds open over the window
  fs_stats        DOUBLE NOT NULL,            -- mds getattr over the window
  coverage_bytes  DOUBLE NOT NULL,            -- TOKIO coverage factors (0 without server data)
  coverage_opens  DOUBLE NOT NULL,
  coverage_stats  DOUBLE NOT NULL,
  ost_source      VARCHAR(16) NOT NULL,       -- layouts, jobstats or none
  view_json       LONGTEXT NOT NULL,          -- `iosonar xlayer --format json`, with the 1 s series
  PRIMARY KEY (cluster, job_id),
  KEY job_xlayer_window (window_start, window_end)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per (job, layer, server): which share of the server's load over the
-- job's window came from the job. "Which job floods OST X?":
--   SELECT cluster, job_id, share, job_bytes FROM job_server_share
--   WHERE layer = 'ost' AND server = 'fs-OST0004'
--     AND window_start < '2026-11-22 10:00' AND window_end > '2026-11-22 09:00'
--   ORDER BY share DESC LIMIT 10
CREATE TABLE IF NOT EXISTS job_server_share (
  cluster         VARCHAR(64) NOT NULL,
  job_id          BIGINT UNSIGNED NOT NULL,
  layer           VARCHAR(16) NOT NULL,       -- forwarding, ost or mdt
  server          VARCHAR(255) NOT NULL,      -- forwarding node, OST or MDT target name
  computed_at     DATETIME(6) NOT NULL,
  window_start    DATETIME(6) NOT NULL,       -- the job's window (copied from job_xlayer)
  window_end      DATETIME(6) NOT NULL,
  job_bytes       DOUBLE NOT NULL,
  total_bytes     DOUBLE NOT NULL,
  share           DOUBLE NOT NULL,            -- forwarding/ost: job_bytes / total_bytes; mdt: job_ops / total_ops
  job_ops         DOUBLE NOT NULL,
  total_ops       DOUBLE NOT NULL,
  in_flight_mean  DOUBLE NULL,                -- osc RPCs in flight (NULL: no osc records)
  estimated       TINYINT(1) NOT NULL,        -- 1: OST bytes from layouts, not job_stats
  PRIMARY KEY (cluster, job_id, layer, server),
  KEY job_server_share_server (layer, server, window_start)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per job and mode: the latest second-pass compression report.
CREATE TABLE IF NOT EXISTS job_compression (
  cluster          VARCHAR(64) NOT NULL,
  job_id           BIGINT UNSIGNED NOT NULL,
  lossy            TINYINT(1) NOT NULL,       -- 0 lossless (default), 1 --lossy
  computed_at      DATETIME(6) NOT NULL,
  records          BIGINT UNSIGNED NOT NULL,  -- trace records in
  record_groups    BIGINT UNSIGNED NOT NULL,  -- groups out
  processes        BIGINT UNSIGNED NOT NULL,
  offset_patterns  BIGINT UNSIGNED NOT NULL,
  record_ratio     DOUBLE NOT NULL,           -- records / groups (Beacon's Table 8)
  baseline_bytes   BIGINT UNSIGNED NOT NULL,
  compressed_bytes BIGINT UNSIGNED NOT NULL,
  byte_ratio       DOUBLE NOT NULL,           -- baseline / compressed
  PRIMARY KEY (cluster, job_id, lossy)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per (cluster, period, who, metric, rank): the scoreboard of a period.
CREATE TABLE IF NOT EXISTS scoreboard (
  cluster      VARCHAR(64) NOT NULL,          -- --cluster, '' when not given
  period_from  DATETIME(6) NOT NULL,          -- --from (1970-01-01 when not given)
  period_to    DATETIME(6) NOT NULL,          -- --to, exclusive (the time of the run when not given)
  who          VARCHAR(12) NOT NULL,          -- user or application
  metric       VARCHAR(8) NOT NULL,           -- bytes (read + written), ops (data ops) or meta
  rank_no      INT UNSIGNED NOT NULL,         -- 1 = top
  computed_at  DATETIME(6) NOT NULL,
  name         VARCHAR(255) NOT NULL,         -- the user or the application
  jobs         BIGINT UNSIGNED NOT NULL,
  read_bytes   BIGINT UNSIGNED NOT NULL,
  write_bytes  BIGINT UNSIGNED NOT NULL,
  data_ops     BIGINT UNSIGNED NOT NULL,
  meta_ops     BIGINT UNSIGNED NOT NULL,
  period_jobs  BIGINT UNSIGNED NOT NULL,      -- all jobs with trace records in the period
  PRIMARY KEY (cluster, period_from, period_to, who, metric, rank_no),
  KEY scoreboard_name (who, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
