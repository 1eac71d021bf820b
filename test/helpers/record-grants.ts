// Preloaded (`node --import`) into a daemon whose turns on an account a test checks: every
// grant its dispatchers publish (dispatch.ts GRANT_CHANNEL), with the files waiting when it
// was decided, appended as a JSON line to the file DROPLINE_TEST_GRANTS names, in the order
// of the grants. Written at once: a daemon stopped later loses none.
import diagnosticsChannel from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import { GRANT_CHANNEL } from '../../src/service/dispatch.ts';

const path = process.env.DROPLINE_TEST_GRANTS;
if (!path) throw new Error('record-grants: DROPLINE_TEST_GRANTS names no file');
diagnosticsChannel.subscribe(GRANT_CHANNEL, (event) => {
  appendFileSync(path, `${JSON.stringify(event)}\n`);
});
