// SQL text both backends write the same way (standard SQL, named parameters).

/**
 * In a file's acquisition: the previous holder when this acquisition takes its expired lease
 * (a dead or stalled worker; not this worker's own), else null.
 */
export const TAKEN_OVER_FROM = `taken_over_from = CASE WHEN lease_owner IS NOT NULL AND lease_owner <> :owner
  THEN lease_owner END`;

/** /metrics: files by state (read from the state index). */
export const GAUGE_FILES = 'SELECT state, count(*) AS n FROM files GROUP BY state';
/** /metrics: chunks in doubt of the files not finished (a finished file's are settled history). */
export const GAUGE_IN_DOUBT = `SELECT count(*) AS n FROM chunks c JOIN files f ON f.file_id = c.file_id
  WHERE c.state = 'in_doubt' AND f.state NOT IN ('rejected', 'duplicate', 'completed', 'cancelled')`;
