-- Migration 36: LASSi baselines (avg_fs, `iosonar lassi baseline`): per file
-- system and op the average per application-hour over a history. One row per
-- (baseline, fs, op); `lassi` and `report` read the newest baseline of the
-- window length they analyse unless told which.

CREATE TABLE IF NOT EXISTS lassi_baseline (
  name            VARCHAR(128) NOT NULL,       -- default FROM..TO of the history
  fs              VARCHAR(64) NOT NULL,
  op              VARCHAR(32) NOT NULL,        -- read_kb, read_ops, ..., open, close, ... (LASSi's names)
  avg_per_window  DOUBLE NOT NULL,             -- mean of the op per application window
  app_windows     BIGINT UNSIGNED NOT NULL,    -- application windows averaged over (Table 1's app hours)
  window_s        INT UNSIGNED NOT NULL,       -- 3600: per application-hour
  history_from    DATETIME(6) NOT NULL,        -- UTC, for people
  history_to      DATETIME(6) NOT NULL,
  computed_at     DATETIME(6) NOT NULL,
  history_from_ns BIGINT NOT NULL,             -- the same instants, exactly
  history_to_ns   BIGINT NOT NULL,
  computed_at_ns  BIGINT NOT NULL,
  PRIMARY KEY (name, fs, op),
  KEY by_time (window_s, computed_at_ns)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
