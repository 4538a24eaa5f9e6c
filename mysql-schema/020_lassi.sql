-- Migration 20: LASSi risk/ops series and probe slowdown factors.
-- One row per (analysis target, window); a recomputation replaces the row.

CREATE TABLE IF NOT EXISTS lassi_risk (
  fs            VARCHAR(64) NOT NULL,
  kind          VARCHAR(8) NOT NULL,         -- fs, app or job
  target        VARCHAR(512) NOT NULL,       -- '' (fs), the command line (app) or the job id (job)
  window_start  DATETIME(6) NOT NULL,        -- UTC
  window_s      INT UNSIGNED NOT NULL,
  alpha         DOUBLE NOT NULL,
  risk_oss      DOUBLE NOT NULL,
  risk_mds      DOUBLE NOT NULL,
  read_kb_ops   DOUBLE NULL,                 -- NULL: undefined (nothing read, or no op counts)
  write_kb_ops  DOUBLE NULL,
  read_kb       DOUBLE NULL,
  write_kb      DOUBLE NULL,
  computed_at   DATETIME(6) NOT NULL,
  PRIMARY KEY (fs, kind, target(255), window_start, window_s)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS probe_slowdown (
  fs               VARCHAR(255) NOT NULL,
  op               VARCHAR(32) NOT NULL,
  interval_start   DATETIME(6) NOT NULL,
  interval_s       INT UNSIGNED NOT NULL,
  n                BIGINT UNSIGNED NOT NULL,
  mean_s           DOUBLE NOT NULL,
  min_s            DOUBLE NOT NULL,
  median_s         DOUBLE NOT NULL,
  p90_s            DOUBLE NOT NULL,
  p95_s            DOUBLE NOT NULL,
  p99_s            DOUBLE NOT NULL,
  max_s            DOUBLE NOT NULL,
  baseline_median_s DOUBLE NULL,
  slowdown_median  DOUBLE NULL,
  slowdown_p90     DOUBLE NULL,
  computed_at      DATETIME(6) NOT NULL,
  PRIMARY KEY (fs, op, interval_start, interval_s)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
