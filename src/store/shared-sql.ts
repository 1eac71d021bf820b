// SQL text both backends write the same way (standard SQL, named parameters).

/**
 * In a file's acquisition: the previous holder when this acquisition takes its expired lease
 * (a dead or stalled worker; not this worker's own), else null.
 */
export const TAKEN_OVER_FROM = `taken_over_from = CASE WHEN lease_owner IS NOT NULL AND lease_owner <> :owner
  THEN lease_owner END`;
