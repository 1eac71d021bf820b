// The whatsapp channel (docs/channels.md "WhatsApp"): one POST
// /MultiChannelInput/SendMessageMetaWhatsApp a recipient, an approved template and its
// parameters, from the file's sending number or the account's.
import type { Channel } from '../channel.ts';
import { countriesNote, quote } from '../describe.ts';
import { WhatsAppRules } from './rules.ts';

export const whatsapp: Channel = {
  name: 'whatsapp',
  directives: ['templateId', 'source'],
  rules: (ctx) => new WhatsAppRules(ctx),
  contentOf: ({ whatsapp: w }) => {
    if (!w) return null;
    return w.source === null
      ? { channel: 'whatsapp', templateId: w.templateId }
      : { channel: 'whatsapp', templateId: w.templateId, source: w.source };
  },
  describe: (s) => {
    // docs/format.md "WhatsApp files": no segments or encodings; the template, its sending number, its parameters.
    const w = s.whatsapp;
    const out = [`  channel whatsapp${countriesNote(s)}`];
    if (w) {
      out.push(`  template ${w.templateId} (a WhatsApp template approved on the service)`);
      out.push(`  sending number ${w.source ?? "the account's own"}`);
    }
    // Its parameters: where they come from, and those of the first line that has them all, as
    // sent (a JSON array, in the template's order).
    const t = s.templates[0];
    if (t !== undefined) {
      const from = t.template === '' ? 'none (the template has no parameters)' : quote(t.template, 160);
      const example = t.example.length > 320 ? `${t.example.slice(0, 320)}…` : t.example;
      out.push(`  parameters ${from}`, `    example (line ${t.line}): ${example}`);
    }
    return out;
  },
  openAccount: async (opening) => (await import('./account.ts')).openWhatsAppAccount(opening),
};
