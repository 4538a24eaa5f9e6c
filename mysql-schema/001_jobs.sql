-- iosonar job database, migration 1: jobs and the nodes they ran on.
-- Applied by `iosonar db-migrate` (recorded in schema_migrations); every
-- statement is safe to run again. Times are UTC (the session time zone is
-- +00:00), DATETIME(6). Text is utf8mb4 with binary collation; job names,
-- command lines and working directories are BLOBs: stored byte for byte,
-- whatever their encoding (a job is never refused for its name).

CREATE TABLE IF NOT EXISTS jobs (
  cluster       VARCHAR(64)  NOT NULL,
  job_id        BIGINT UNSIGNED NOT NULL,        -- Slurm JobIDRaw (array tasks have their own)
  step          VARCHAR(32)  NOT NULL DEFAULT '', -- '' = the job itself; 'batch', 'extern', '0', ... = steps
  array_job_id  BIGINT UNSIGNED NULL,
  array_task_id INT UNSIGNED NULL,
  user_name     VARCHAR(64)  NULL,
  uid           INT UNSIGNED NULL,
  group_name    VARCHAR(64)  NULL,
  gid           INT UNSIGNED NULL,
  account       VARCHAR(64)  NULL,
  partition_name VARCHAR(64) NULL,
  job_name      BLOB         NULL,                -- bytes exactly as the user typed them (any encoding)
  command       BLOB         NULL,                -- SubmitLine, else the batch script's command (LASSi groups by it)
  work_dir      BLOB         NULL,
  node_list     TEXT         NULL,                -- compact Slurm form, nid[05398-05399]
  node_count    INT UNSIGNED NULL,
  task_count    INT UNSIGNED NULL,
  submit_time   DATETIME(6)  NULL,
  start_time    DATETIME(6)  NULL,
  end_time      DATETIME(6)  NULL,
  state         VARCHAR(32)  NULL,                -- RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  exit_code     INT          NULL,
  exit_signal   INT          NULL,
  source        VARCHAR(16)  NOT NULL,            -- who reported it last: prolog, epilog, sacct
  updated_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (cluster, job_id, step),
  KEY jobs_time (start_time, end_time),
  KEY jobs_user (user_name),
  KEY jobs_array (cluster, array_job_id, array_task_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The nodes of a job (step ''), expanded from node_list.
CREATE TABLE IF NOT EXISTS job_nodes (
  cluster VARCHAR(64)  NOT NULL,
  job_id  BIGINT UNSIGNED NOT NULL,
  node    VARCHAR(128) NOT NULL,
  PRIMARY KEY (cluster, job_id, node),
  KEY job_nodes_node (node)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Where the poller left off, per cluster (catch-up after downtime).
CREATE TABLE IF NOT EXISTS poll_state (
  cluster   VARCHAR(64) NOT NULL PRIMARY KEY,
  polled_to DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
