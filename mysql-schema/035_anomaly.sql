-- Migration 35: anomaly detection (`iosonar anomaly`, `iosonar screen`;
-- definitions in analysis-jobs/anomaly/anomaly.h and screen.h). A job's
-- verdict against its history with its ranked neighbours and lagging servers
-- (each write replaces the job's previous rows in one transaction), and the
-- system occurrences of the hourly screening, one row per occurrence (its id
-- is kind, server and start; a later run extends end_time), with the time the
-- alert about it was sent.

CREATE TABLE IF NOT EXISTS job_anomaly (
  cluster       VARCHAR(64) NOT NULL,
  job_id        BIGINT UNSIGNED NOT NULL,
  computed_at   DATETIME(6) NOT NULL,
  verdict       VARCHAR(24) NOT NULL,       -- normal, anomalous or not_enough_history
  history_runs  INT UNSIGNED NOT NULL,
  slowdown      DOUBLE NOT NULL,            -- slowest anomalous phase vs its history (0: none)
  result_json   LONGTEXT NOT NULL,          -- `iosonar anomaly --format json`
  PRIMARY KEY (cluster, job_id),
  KEY job_anomaly_verdict (verdict, computed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_anomaly_neighbour (
  cluster       VARCHAR(64) NOT NULL,
  job_id        BIGINT UNSIGNED NOT NULL,
  rank_no       INT UNSIGNED NOT NULL,      -- 0 = most likely interference
  neighbour     VARCHAR(64) NOT NULL,       -- its job id
  shared        TEXT NOT NULL,              -- forwarding nodes and OSTs, comma-separated
  evidence      VARCHAR(128) NOT NULL,      -- high_mdops,high_bw,high_iops,n1_mode (any of)
  md_ops_per_s  DOUBLE NOT NULL,
  PRIMARY KEY (cluster, job_id, rank_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_server_outlier (
  cluster         VARCHAR(64) NOT NULL,
  job_id          BIGINT UNSIGNED NOT NULL,
  kind            VARCHAR(16) NOT NULL,     -- forwarding or ost
  server          VARCHAR(128) NOT NULL,
  bandwidth_ratio DOUBLE NOT NULL,          -- to the peers' median (see anomaly.h)
  cost_s          DOUBLE NOT NULL,
  PRIMARY KEY (cluster, job_id, kind, server)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS server_anomaly (
  kind          VARCHAR(16) NOT NULL,       -- forwarding or ost
  server        VARCHAR(128) NOT NULL,
  start_time    DATETIME(6) NOT NULL,       -- UTC
  end_time      DATETIME(6) NOT NULL,       -- end of its last low bucket so far
  duration_s    DOUBLE NOT NULL,
  max_bw_ratio  DOUBLE NOT NULL,            -- largest bucket maximum / peak
  peak          DOUBLE NOT NULL,            -- bytes/s
  still_open    TINYINT NOT NULL,           -- under the threshold when last screened
  alerted_at    DATETIME(6) NULL,           -- when the e-mail went out (NULL: not yet / not due)
  updated_at    DATETIME(6) NOT NULL,
  PRIMARY KEY (kind, server, start_time),
  KEY server_anomaly_open (still_open, end_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- What is wrong now: occurrences still open, longest first.
CREATE OR REPLACE VIEW open_server_anomalies AS
  SELECT kind, server, start_time, end_time, duration_s, max_bw_ratio, alerted_at
  FROM server_anomaly WHERE still_open = 1 ORDER BY duration_s DESC;
