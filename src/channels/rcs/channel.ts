// The rcs channel (docs/channels.md "RCS and flash SMS"): POST /mtmessage with Channel RCS, the SMS host and
// credentials; its files read as SMS files, one message a recipient (rcs/rules.ts).
import type { Channel } from '../channel.ts';
import { countriesNote, fmt, templateLines } from '../describe.ts';
import { RcsRules } from './rules.ts';

export const rcs: Channel = {
  name: 'rcs',
  directives: [],
  rules: (ctx) => new RcsRules(ctx),
  contentOf: () => ({ channel: 'rcs' }),
  describe: (s) => [
    `  channel rcs: ${fmt(s.segments)} message(s), one a recipient (no segments; sent as written)${countriesNote(s)}`,
    ...templateLines(s),
  ],
  // The SMS host's client, its chunks sent with POST /mtmessage (sms/account.ts).
  openAccount: async (opening) => (await import('../sms/account.ts')).openMtAccount(opening, 'rcs'),
};
