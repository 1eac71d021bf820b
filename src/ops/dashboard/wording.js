// Codes and their parameters worded in the page's language (docs/dashboard.md "Codes and
// languages"): an API error, a rejection, a state's reason, why a file is where it is.

import { codeText, has, num, t, when, whenIn } from './i18n.js';

/** States whose reason says why the file is not moving (the others' reasons are history). */
const WHY = new Set(['rejected', 'duplicate', 'scheduled', 'paused', 'partial', 'cancelled']);

/** An API error in the page's language: its code worded with its parameters, else as it came. */
export function errorText(err) {
  const p = err.params ?? {};
  if (err.code === 'DROPLINE_ERR_FILE_STATE' && p.state)
    return t('error.FILE_STATE', {
      state: t(`state.${p.state}`),
      action: t(`action.${p.action}`),
      from: String(p.from)
        .split(' or ')
        .map((s) => t(`state.${s}`))
        .join(t('or')),
    });
  if (err.code === 'DROPLINE_ERR_FILE_STATE' && p.why) return t(`error.${p.why}`);
  if (err.code) return codeText(err.code, 'message');
  // A file check's refusals, by their status (413, 408, 429).
  if (has(`http.${err.status}`)) return t(`http.${err.status}`);
  return err.message;
}

/** Parameters as shown: numbers with the language's separators, states in its words. */
function shown(params) {
  const out = {};
  for (const [k, v] of Object.entries(params ?? {}))
    out[k] = typeof v === 'number' ? num(v) : k === 'state' ? t(`state.${v}`) : v;
  return out;
}

/** A rejection (or a record's error) from its code and parameters: `line 3: …`, `1.234 of …`. */
export function rejectionText(code, params = {}) {
  const detailed = `rejection.${code}`;
  if (has(detailed) && Object.keys(params).some((k) => k !== 'line')) return t(detailed, shown(params));
  const message = codeText(code, 'message');
  return params.line === undefined ? message : t('rejection.line', { line: params.line, message });
}

/** A state's reason from its code (`reason.<code>`, or a rejection's code) and parameters. */
export function worded(w) {
  if (!w) return '';
  if (has(`reason.${w.code}`)) return t(`reason.${w.code}`, shown(w.params));
  return rejectionText(w.code, w.params);
}

/** Why the file is where it is: its rejection, its schedule, what it waits on, or its state's reason. */
export function why(m) {
  if (m.rejection) return `${m.rejection.code}: ${rejectionText(m.rejection.code, m.rejection.params)}`;
  if (m.state === 'scheduled' && m.scheduledUntil) {
    // The start in the source's time zone, named (as the CLI says it).
    const zone = m.reasonCode?.params?.zone;
    if (zone) return t(`reason.${m.reasonCode.code}`, { at: whenIn(m.scheduledUntil, zone), zone });
    return t('since.scheduled', { at: when(m.scheduledUntil) });
  }
  // What a sending file waits on: a code and its parameters, worded here (docs/dashboard.md).
  if (m.detail) return t(`detail.${m.detail.code}`, { since: when(m.detail.since) });
  return WHY.has(m.state) && m.reasonCode ? worded(m.reasonCode) : '';
}

const CHANNEL_NAMES = { sms: 'SMS', rcs: 'RCS', email: 'Email', whatsapp: 'WhatsApp', twoway: 'SMS two-way' };

/** The channel a campaign goes out on, as the service names it (the same in both languages). */
export function channelName(m) {
  const name = CHANNEL_NAMES[m.channel] ?? 'SMS';
  return m.flash ? `${name} flash` : name;
}
