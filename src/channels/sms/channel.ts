// The sms channel (docs/channels.md "What works"): POST /mtmessage/massive for a file's chunks, or
// POST /mtmessage for a flash file; its records read by sms/rules.ts.
import type { Channel } from '../channel.ts';
import { costLines, countriesNote, fmt, templateLines } from '../describe.ts';
import { SmsRules } from './rules.ts';

export const sms: Channel = {
  name: 'sms',
  directives: ['flash'],
  rules: (ctx) => new SmsRules(ctx),
  contentOf: (summary) => (summary.directives.flash?.flash ? { channel: 'sms', flash: true } : null),
  describe: (s) => [
    `  segments ${fmt(s.segments)} (GSM-7 ${fmt(s.encodings.gsm7)}, UCS-2 ${fmt(s.encodings.ucs2)} recipients)${countriesNote(s)}`,
    ...costLines(s),
    ...templateLines(s),
  ],
  openAccount: async (opening) => (await import('./account.ts')).openMtAccount(opening, 'sms'),
};
