// The twoway channel (docs/channels.md "Two-way SMS"): one POST /momessage a recipient, from the
// account's short code (or its source's), so the recipient can answer; its files read as SMS
// files are (twoway/rules.ts).
import type { Channel } from '../channel.ts';
import { costLines, countriesNote, fmt, templateLines } from '../describe.ts';
import { TwoWayRules } from './rules.ts';

export const twoway: Channel = {
  name: 'twoway',
  directives: [],
  rules: (ctx) => new TwoWayRules(ctx),
  contentOf: () => ({ channel: 'twoway' }),
  describe: (s) => [
    `  channel twoway: one POST /momessage a recipient, from a short code; segments ${fmt(s.segments)} (GSM-7 ${fmt(s.encodings.gsm7)}, UCS-2 ${fmt(s.encodings.ucs2)} recipients)${countriesNote(s)}`,
    ...costLines(s),
    ...templateLines(s),
  ],
  openAccount: async (opening) => (await import('./account.ts')).openTwoWayAccount(opening),
};
