// `#! channel: twoway` (or a source's channel twoway) as the reader decides it (docs/format.md
// "Two-way SMS files"): read exactly as an sms file (recipients, segments, encodings, warnings,
// transliteration), `#! flash:` refused, and a twoway file in an sms source refused.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refuseOtherChannel } from '../../src/format/reader.ts';
import { counts, problems, type Read, read, rejection } from '../helpers/read-drop.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const TWOWAY = { channel: 'twoway' } as const;
const sent = (r: Read) => r.recipients.map((x) => [x.line, x.number, x.text, x.segments]);

describe('two-way SMS files: read as sms files', () => {
  it('the SMS samples read as twoway give what they give as sms, segments and warnings included', async () => {
    for (const name of (await readdir(join(ROOT, 'samples'))).filter(
      (n) => n.endsWith('.txt') && !['email.txt', 'whatsapp.txt', 'rcs.txt', 'twoway.txt'].includes(n),
    )) {
      const text = await readFile(join(ROOT, 'samples', name), 'utf8');
      const sms = await read(text, { name });
      const twoway = await read(text, { name, ...TWOWAY });
      expect(twoway.summary.channel, name).toBe('twoway');
      expect(problems(twoway), name).toEqual(problems(sms));
      expect(sent(twoway), name).toEqual(sent(sms));
      expect(counts(twoway.summary), name).toEqual(counts(sms.summary));
      expect(twoway.summary.segments, name).toBe(sms.summary.segments);
      expect(twoway.summary.encodings, name).toEqual(sms.summary.encodings);
      expect(twoway.summary.rejection, name).toEqual(sms.summary.rejection);
    }
  });

  it('samples/twoway.txt: four recipients of one segment, a short number invalid', async () => {
    const r = await read(await readFile(join(ROOT, 'samples', 'twoway.txt'), 'utf8'));
    expect(r.summary).toMatchObject({ channel: 'twoway', accepted: true, valid: 4, invalid: 1, segments: 4 });
    expect(problems(r).map((p) => p[1])).toEqual(['INVALID_NUMBER']);
  });

  it('a source transliterating to gsm7 transliterates a twoway file as an sms one', async () => {
    const r = await read('3001234567;Ramón, tu cita “confirmada”\n', { ...TWOWAY, transliterate: 'gsm7' });
    expect(sent(r)).toEqual([[1, '573001234567', 'Ramon, tu cita "confirmada"', 1]]);
  });

  it('`#! flash:` is BAD_DIRECTIVE; a twoway file in an sms source is refused', async () => {
    expect(rejection(await read('#! flash: true\n3001234567;Hola\n', TWOWAY))).toEqual([
      'BAD_DIRECTIVE',
      'line 1: `#! flash:` is for sms files (`#! channel: sms`); this file is for twoway',
    ]);
    const file = (await read('#! channel: twoway\n3001234567;Hola\n')).summary;
    refuseOtherChannel(file, 'sms');
    expect(file.rejection?.message).toBe(
      'line 1: this source sends sms, not twoway: drop the file in a source whose account sends twoway',
    );
  });
});
