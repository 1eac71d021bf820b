// The email channel (docs/channels.md "Email"): POST /email/v1/deliver, at most 50 recipients a
// request, a stored template or a subject and HTML; shared attachments read with the file.
import type { FileContent } from '../../store/store.ts';
import type { Channel } from '../channel.ts';
import { quote, templateLines } from '../describe.ts';
import { EmailRules } from './rules.ts';

export const email: Channel = {
  name: 'email',
  directives: ['subject', 'templateId'],
  rules: (ctx) => new EmailRules(ctx),
  contentOf: ({ email }) => {
    if (!email) return null;
    const out: FileContent = { channel: 'email' };
    if (email.templateId !== null) out.templateId = email.templateId;
    if (email.subject !== null) out.subject = email.subject;
    if (email.html !== null) out.html = email.html;
    return out;
  },
  describe: (s, templateCheck) => {
    // docs/format.md "Email files": no segments, encodings or countries; what every recipient is sent.
    const e = s.email;
    const out = ['  channel email'];
    if (e?.templateId) {
      const checked =
        templateCheck === null || templateCheck === 'missing'
          ? ''
          : templateCheck === 'found'
            ? '; the account has it'
            : `; not checked: ${templateCheck}`;
      out.push(`  template ${e.templateId} (stored on the service${checked})`);
    }
    if (e?.subject != null) out.push(`  subject ${quote(e.subject, 160)}`);
    if (e?.html != null) out.push(`  html body ${quote(e.html, 160)}`);
    return [...out, ...templateLines(s)];
  },
  checkWithAccount: async (summary, account) =>
    (await import('./template-check.ts')).checkTemplate(summary, account),
  openAccount: async (opening) => (await import('./account.ts')).openEmailAccount(opening),
};
