// The floor for `validate`: stream the file, split lines, regex-check the number.
// Run as its own process by bench/format.bench.ts, the same way `dropline validate` is.
import { createReadStream } from 'node:fs';

const path = process.argv[2]!;
const bulk = process.argv[3] === 'bulk';
const re = /^\+?\d{7,15}$/;
const decoder = new TextDecoder('utf-8');
let rest = '';
let lines = 0;
let valid = 0;
for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
  const parts = (rest + decoder.decode(chunk as Buffer, { stream: true })).split('\n');
  rest = parts.pop() ?? '';
  for (const line of parts) {
    lines++;
    const number = bulk ? line : line.slice(0, line.indexOf(';'));
    if (re.test(number)) valid++;
  }
}
process.stdout.write(`${JSON.stringify({ lines, valid })}\n`);
