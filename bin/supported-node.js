// Plain JavaScript on purpose: it runs before anything else, on whatever Node.js the user has,
// to say "too old" instead of failing on the first `.ts` import (ERR_UNKNOWN_FILE_EXTENSION).

/** dropline runs its TypeScript sources directly; its dependencies need 22.22 too (README). */
export const MIN_NODE = '22.22.0';

/** Whether `version` (process.versions.node, e.g. "24.11.1") is MIN_NODE or newer. */
export function nodeSupported(version) {
  const parts = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!parts) return false;
  const min = MIN_NODE.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const n = Number(parts[i + 1]);
    if (n !== min[i]) return n > min[i];
  }
  return true;
}
