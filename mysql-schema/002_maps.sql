-- Migration 2: the static maps an administrator fills (Beacon keeps the same):
-- compute node -> forwarding (I/O) node, compute node -> file systems it mounts,
-- file system -> OSTs and their servers; and which OSTs a job used (filled by
-- the analyses from the trace's file layouts, or by hand).

CREATE TABLE IF NOT EXISTS node_forwarding (
  node     VARCHAR(128) NOT NULL PRIMARY KEY,
  fwd_node VARCHAR(128) NOT NULL,
  KEY node_forwarding_fwd (fwd_node)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS node_filesystems (
  node       VARCHAR(128) NOT NULL,
  filesystem VARCHAR(64)  NOT NULL,
  mount      VARCHAR(255) NULL,
  PRIMARY KEY (node, filesystem)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS filesystem_osts (
  filesystem VARCHAR(64)  NOT NULL,
  ost        VARCHAR(64)  NOT NULL,   -- e.g. scratch-OST0012
  oss        VARCHAR(128) NULL,       -- the server holding it
  PRIMARY KEY (filesystem, ost)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_osts (
  cluster    VARCHAR(64) NOT NULL,
  job_id     BIGINT UNSIGNED NOT NULL,
  filesystem VARCHAR(64) NOT NULL,
  ost        VARCHAR(64) NOT NULL,
  PRIMARY KEY (cluster, job_id, filesystem, ost),
  KEY job_osts_ost (filesystem, ost)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
