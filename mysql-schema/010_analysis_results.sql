-- Migration 10: results of `iosonar phases` (one row per I/O
-- phase of a job, the latest computation) and of `iosonar summarize-job` (the
-- job's row, TOKIO summarize_job column names plus iosonar_*, as JSON).

CREATE TABLE IF NOT EXISTS job_phases (
  cluster      VARCHAR(64) NOT NULL,
  job_id       BIGINT UNSIGNED NOT NULL,
  phase_no     INT UNSIGNED NOT NULL,      -- 0, 1, ... by start time
  computed_at  DATETIME(6) NOT NULL,
  direction    VARCHAR(5) NOT NULL,        -- read or write
  start_time   DATETIME(6) NOT NULL,       -- UTC, the phase's first bucket
  duration_s   DOUBLE NOT NULL,
  bytes        BIGINT UNSIGNED NOT NULL,
  bw_mean      DOUBLE NOT NULL,            -- bytes/s over the phase
  bw_peak      DOUBLE NOT NULL,            -- bytes/s, largest bucket
  wavelet      VARCHAR(8) NOT NULL,        -- haar or db4
  PRIMARY KEY (cluster, job_id, phase_no),
  KEY job_phases_time (start_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_tokio_summary (
  cluster      VARCHAR(64) NOT NULL,
  job_id       BIGINT UNSIGNED NOT NULL,
  computed_at  DATETIME(6) NOT NULL,
  row_json     LONGTEXT NOT NULL,          -- one element of `iosonar summarize-job --format json`
  PRIMARY KEY (cluster, job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
