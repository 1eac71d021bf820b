// Every test that reads a file in its own process checks each text hashed from the file's
// bytes against the same text hashed from its string (src/format/dedupe.ts byteCheck): a
// value or message whose place in the bytes was wrong throws there.
import { byteCheck } from '../../src/format/dedupe.ts';

byteCheck.on = true;
