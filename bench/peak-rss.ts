// Preloaded with `node --import` into a benchmarked process: prints its peak RSS (KiB) on
// stderr as it exits, so the bench measures the whole process without /usr/bin/time.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  writeSync(2, `\npeak-rss-kib ${process.resourceUsage().maxRSS}\n`);
});
