-- Migration 3: the results of `iosonar job-summary` (one row per job, the
-- latest computation), and views of per-user and per-application statistics
-- (Beacon caches such per-job statistics as MySQL views).

CREATE TABLE IF NOT EXISTS job_summary (
  cluster           VARCHAR(64) NOT NULL,
  job_id            BIGINT UNSIGNED NOT NULL,
  computed_at       DATETIME(6) NOT NULL,
  runtime_s         DOUBLE NOT NULL,
  read_bytes        BIGINT UNSIGNED NOT NULL,
  write_bytes       BIGINT UNSIGNED NOT NULL,
  read_ops          BIGINT UNSIGNED NOT NULL,
  write_ops         BIGINT UNSIGNED NOT NULL,
  read_bw_avg       DOUBLE NOT NULL,   -- bytes/s
  read_bw_peak      DOUBLE NOT NULL,
  write_bw_avg      DOUBLE NOT NULL,
  write_bw_peak     DOUBLE NOT NULL,
  read_iops         DOUBLE NOT NULL,
  write_iops        DOUBLE NOT NULL,
  meta_ops          BIGINT UNSIGNED NOT NULL,
  meta_ops_per_s    DOUBLE NOT NULL,
  processes_with_io BIGINT UNSIGNED NOT NULL,
  nodes_with_io     BIGINT UNSIGNED NOT NULL,
  files             BIGINT UNSIGNED NOT NULL,
  errors            BIGINT UNSIGNED NOT NULL,
  io_mode_read      VARCHAR(8) NOT NULL,
  io_mode_write     VARCHAR(8) NOT NULL,
  summary_json      LONGTEXT NOT NULL,   -- the full summary as `job-summary --format json` prints it
  PRIMARY KEY (cluster, job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Per user: jobs, node-hours, and the I/O of the summarized ones.
CREATE OR REPLACE VIEW user_stats AS
SELECT j.cluster, j.user_name,
       COUNT(*) AS jobs,
       SUM(j.state = 'COMPLETED') AS completed,
       SUM(j.state IS NOT NULL AND j.state NOT IN ('COMPLETED', 'RUNNING', 'PENDING')) AS not_completed,
       SUM(COALESCE(j.node_count, 0) * TIMESTAMPDIFF(MICROSECOND, j.start_time, j.end_time)) / 3.6e9 AS node_hours,
       COUNT(s.job_id) AS summarized,
       COALESCE(SUM(s.read_bytes), 0) AS read_bytes,
       COALESCE(SUM(s.write_bytes), 0) AS write_bytes,
       COALESCE(SUM(s.meta_ops), 0) AS meta_ops
FROM jobs j LEFT JOIN job_summary s ON s.cluster = j.cluster AND s.job_id = j.job_id
WHERE j.step = ''
GROUP BY j.cluster, j.user_name;

-- Per application: runs grouped by their exact command line (LASSi's grouping).
CREATE OR REPLACE VIEW app_stats AS
SELECT j.cluster, j.command,
       COUNT(*) AS runs,
       COUNT(DISTINCT j.user_name) AS users,
       AVG(TIMESTAMPDIFF(MICROSECOND, j.start_time, j.end_time)) / 1e6 AS avg_runtime_s,
       COUNT(s.job_id) AS summarized,
       AVG(s.read_bytes) AS avg_read_bytes,
       AVG(s.write_bytes) AS avg_write_bytes,
       AVG(s.read_bw_avg) AS avg_read_bw,
       AVG(s.write_bw_avg) AS avg_write_bw,
       AVG(s.meta_ops) AS avg_meta_ops
FROM jobs j LEFT JOIN job_summary s ON s.cluster = j.cluster AND s.job_id = j.job_id
WHERE j.step = ''
GROUP BY j.cluster, j.command;
