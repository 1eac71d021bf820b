// Where a file is, as a campaign's row and its page both show it: its state, its times, the
// bar of where its recipients are, its numbers and its speed.

import { h } from './dom.js';
import { duration, num, t, when } from './i18n.js';

/**
 * The recipients read: what a file counts first, and the figure its rejection names (`3 of 4
 * recipients are invalid`). Not `records`, the lines that hold numbers: a bulk line of three
 * numbers is one record and three recipients (docs/format.md).
 */
export function recipientsRead(c) {
  return c.valid + c.invalid + c.duplicates + c.suppressed + (c.contactLimited ?? 0);
}

/** States a file does not leave. */
export const FINAL = new Set(['rejected', 'duplicate', 'completed', 'cancelled']);

export function badge(state) {
  return h('span', { class: `badge state-${state}`, 'data-state': state }, t(`state.${state}`));
}

/** When the file arrived and, once it is done, when it finished (docs/dashboard.md). */
export function times(m) {
  const stamps = Object.values(m.timestamps ?? {}).sort();
  const done = FINAL.has(m.state) || m.state === 'partial' ? m.timestamps?.[m.state] : null;
  return h(
    'span',
    { class: 'times' },
    stamps.length
      ? h('time', { datetime: stamps[0], 'data-time': 'arrived' }, t('list.arrived', { at: when(stamps[0]) }))
      : '',
    done
      ? h('time', { datetime: done, 'data-time': 'finished' }, t('list.finished', { at: when(done) }))
      : '',
  );
}

/** Parts of the progress bar, in the order drawn. */
function parts(c) {
  const stuck = c.rejected + c.failed + c.inDoubt;
  return [
    ['delivered', c.delivered],
    // Email and WhatsApp: taken by the service, final, with no delivery report to come.
    ['accepted', c.accepted ?? 0],
    ['undelivered', c.undelivered],
    ['unknown', c.unknown],
    ['pending', c.pendingDelivery],
    ['problem', stuck],
    // A cancelled file's recipients never sent are cancelled, not "to send".
    ['cancelled', c.cancelled ?? 0],
    ['tosend', Math.max(0, c.valid - c.submitted - stuck - (c.cancelled ?? 0))],
    // Held back by the contact limit: not valid any more, not sent (docs/campaign-rules.md).
    ['notsent', c.invalid + c.duplicates + c.suppressed + (c.contactLimited ?? 0)],
  ];
}

export function progressBar(m) {
  const c = m.counts;
  const total = parts(c).reduce((n, [, v]) => n + v, 0);
  const bar = h('div', {
    class: `bar${m.state === 'validating' ? ' busy' : ''}`,
    role: 'img',
    'aria-label': `${t('delivered')} ${c.delivered}, ${t('undelivered')} ${c.undelivered}, ${t('pending')} ${c.pendingDelivery}`,
  });
  if (total > 0)
    for (const [name, value] of parts(c))
      if (value > 0)
        bar.append(h('span', { class: `part ${name}`, style: { width: `${(100 * value) / total}%` } }));
  return bar;
}

/** Sent per second (or reports per second once sent) over the last samples, and what is left. */
export class Rates {
  #samples = new Map();

  /** Forgets the files not in `ids` (they left the list). */
  keep(ids) {
    for (const id of this.#samples.keys()) if (!ids.has(id)) this.#samples.delete(id);
  }

  see(m) {
    const c = m.counts;
    const list = this.#samples.get(m.fileId) ?? [];
    const now = Date.now();
    list.push({
      at: now,
      sent: c.submitted,
      reported: c.delivered + c.undelivered + c.unknown + (c.accepted ?? 0),
    });
    while (list.length > 2 && now - list[0].at > 20_000) list.shift();
    this.#samples.set(m.fileId, list);
    if (list.length < 2 || (m.state !== 'sending' && m.state !== 'submitted')) return null;
    const key = m.state === 'sending' ? 'sent' : 'reported';
    const first = list[0];
    const last = list[list.length - 1];
    const rate = (last[key] - first[key]) / ((last.at - first.at) / 1000);
    if (!(rate > 0)) return null;
    const left =
      m.state === 'sending'
        ? Math.max(0, c.valid - c.submitted - c.rejected - c.failed - c.inDoubt)
        : c.pendingDelivery;
    return { rate, eta: left / rate };
  }
}

export function numbers(m, speed) {
  const c = m.counts;
  const items = [
    [t('recipients'), recipientsRead(c)],
    [t('valid'), c.valid],
    [t('sent'), c.submitted],
    [t('delivered'), c.delivered],
    ...(c.accepted ? [[t('accepted'), c.accepted]] : []),
    [t('undelivered'), c.undelivered],
    [t('pending'), c.pendingDelivery],
  ];
  const line = h(
    'p',
    { class: 'numbers' },
    items.map(([label, value]) => h('span', {}, h('b', {}, num(value)), ` ${label}`)),
  );
  if (speed)
    line.append(
      h('span', { class: 'rate' }, t('rate', { rate: num(Math.round(speed.rate)) })),
      h('span', { class: 'eta' }, t('eta', { eta: duration(speed.eta) })),
    );
  return line;
}
