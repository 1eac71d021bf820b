// The floor for `validate`: stream each input file, split lines, regex-check the number.
// Run as its own process by bench/format.bench.ts, the same way `dropline validate` is.
// Arguments: <path> <kind> [<path> <kind> …], kind `bulk` for a number a line (a bulk
// file, a suppression list), anything else for `number;message` lines.
import { createReadStream } from 'node:fs';

const re = /^\+?\d{7,15}$/;
let lines = 0;
let valid = 0;
for (let a = 2; a < process.argv.length; a += 2) {
  const path = process.argv[a]!;
  const bulk = process.argv[a + 1] === 'bulk';
  const decoder = new TextDecoder('utf-8');
  let rest = '';
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const parts = (rest + decoder.decode(chunk as Buffer, { stream: true })).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) {
      lines++;
      const number = bulk ? line : line.slice(0, line.indexOf(';'));
      if (re.test(number)) valid++;
    }
  }
}
process.stdout.write(`${JSON.stringify({ lines, valid })}\n`);
