-- Migration 15 (cross-layer view): file -> OST layouts, as parsed
-- from `lfs getstripe` (or written by `iosonar simulate --mysql`), so the
-- cross-layer view can follow a job's files to the OSTs and MDT that served
-- them. One row per file and job; osts is the stripe order, comma-separated
-- OST indices ("3,4,5,6").

CREATE TABLE IF NOT EXISTS file_layouts (
  cluster     VARCHAR(64)  NOT NULL,
  job_id      BIGINT UNSIGNED NOT NULL,
  filesystem  VARCHAR(64)  NOT NULL,
  path        VARCHAR(1024) NOT NULL,
  stripe_size BIGINT UNSIGNED NOT NULL,
  osts        TEXT         NOT NULL,
  mdt         INT UNSIGNED NULL,
  PRIMARY KEY (cluster, job_id, path(255)),
  KEY file_layouts_path (filesystem, path(255))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
