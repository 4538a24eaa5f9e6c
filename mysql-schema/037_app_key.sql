-- Migration 37: the application key of a run (LASSi groups runs "based on the
-- exact command used"), computed once by whoever reports the run (the prolog
-- from scontrol's Command or the --wrap line, the sacct poller from
-- SubmitLine, WorkDir and JobName; ApplicationKey in core/jobdb/jobdb.h) and
-- kept: the first key written for a run stays. Readers take it from here and
-- never recompute it (rows written before this migration have NULL: readers
-- fall back to computing it from command and work_dir).

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS app_key BLOB NULL AFTER command;
ALTER TABLE jobs ADD INDEX IF NOT EXISTS jobs_app (cluster, app_key(255));

-- app_stats groups runs by their application key (one row per application
-- whichever path reported its runs); command is one of its runs' command lines.
CREATE OR REPLACE VIEW app_stats AS
SELECT j.cluster, COALESCE(j.app_key, j.command) AS app_key, MIN(j.command) AS command,
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
GROUP BY j.cluster, COALESCE(j.app_key, j.command);
