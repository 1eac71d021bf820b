// Preloaded (`node --import`) into a daemon that a crash test kills at one exact moment: its
// first claim has moved files to processing/ and not yet recorded where (claim.ts publishes
// CLAIM_MOVED_CHANNEL just before that record). SIGKILL to itself: nothing after it runs, as
// when the host dies there.
import diagnosticsChannel from 'node:diagnostics_channel';
import { CLAIM_MOVED_CHANNEL } from '../../src/pipeline/claim.ts';

diagnosticsChannel.subscribe(CLAIM_MOVED_CHANNEL, () => {
  process.kill(process.pid, 'SIGKILL');
});
