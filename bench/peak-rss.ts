// Preloaded with `node --import` into a benchmarked process: prints its peak RSS (KiB) and its
// CPU time (user + system, every thread, µs) on stderr as it exits, so the bench measures the
// whole process without /usr/bin/time.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  const u = process.resourceUsage();
  writeSync(2, `\npeak-rss-kib ${u.maxRSS}\ncpu-us ${u.userCPUTime + u.systemCPUTime}\n`);
});
