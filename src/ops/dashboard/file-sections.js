// The sections of a campaign's page below its chart: errors by code, chunks, cost, replies,
// downloads.

import { h, table } from './dom.js';
import { codeText, language, num, t, when } from './i18n.js';

export function renderErrors(el, errors) {
  if (errors.length === 0) {
    el.replaceChildren(h('p', { class: 'muted' }, t('file.noErrors')));
    return;
  }
  el.replaceChildren(
    table(
      [t('col.code'), t('col.count'), t('col.hint'), t('col.lines')],
      errors.map((e) => [
        h('code', {}, e.code),
        num(e.count),
        codeText(e.code, 'hint'),
        h(
          'ul',
          { class: 'lines' },
          // The code's words and the line's value, masked: `57300****123`.
          e.lines.map((l) =>
            h(
              'li',
              {},
              `${t('col.line')} ${l.line}: ${codeText(l.code, 'message')}${l.value ? ` (${l.value})` : ''}`,
            ),
          ),
        ),
      ]),
    ),
  );
}

export function renderChunks(el, c) {
  const rows = [
    ['chunk.pending', c.chunksPending],
    ['chunk.accepted', c.chunksAccepted],
    ['chunk.rejected', c.chunksRejected],
    ['chunk.failed', c.chunksFailed],
    ['chunk.inDoubt', c.chunksInDoubt],
    // Never sent because the file was cancelled (counts before it existed have none).
    ...(c.chunksCancelled ? [['chunk.cancelled', c.chunksCancelled]] : []),
    ['chunk.total', c.chunks],
  ];
  el.replaceChildren(
    table(
      [t('file.chunks'), t('col.count')],
      rows.map(([k, v]) => [t(k), num(v)]),
    ),
  );
}

/** Segments by country, and what transliteration to GSM-7 saves or would save (docs/campaign-rules.md). */
export function renderCost(el, cost) {
  if (!cost) {
    el.replaceChildren(h('p', { class: 'muted' }, t('file.noCost')));
    return;
  }
  const tr = cost.transliteration;
  el.replaceChildren(
    table(
      [t('col.country'), t('col.segments')],
      Object.entries(cost.segmentsByCountry).map(([country, n]) => [country, num(n)]),
    ),
    ...(tr
      ? [
          h(
            'p',
            { class: 'muted', 'data-transliteration': tr.mode },
            t(tr.mode === 'gsm7' ? 'cost.gsm7' : 'cost.never', {
              written: num(tr.segmentsAsWritten),
              gsm7: num(tr.segmentsTransliterated),
            }),
          ),
        ]
      : []),
  );
}

export function renderDownloads(el, m) {
  if (m.prunedAt) {
    el.replaceChildren(h('p', { class: 'muted' }, t('file.pruned', { at: when(m.prunedAt) })));
    return;
  }
  el.replaceChildren(
    ...['report.csv', 'errors.csv'].map((kind) =>
      h(
        'a',
        {
          href: `/api/files/${encodeURIComponent(m.fileId)}/${kind}`,
          download: `${m.name}.${m.fileId}.${kind}`,
        },
        kind,
      ),
    ),
  );
}

/**
 * A campaign sent from a short code: its reply rate and latest replies, numbers masked by the
 * server (docs/dashboard.md "Replies"). Other campaigns have no such section.
 */
export function renderReplies(section, el, replies, submitted) {
  section.hidden = replies === null;
  if (replies === null) return;
  if (replies.replies === 0) {
    el.replaceChildren(h('p', { class: 'muted' }, t('replies.none')));
    return;
  }
  const rate =
    replies.rate === null
      ? '—'
      : new Intl.NumberFormat(language() === 'es' ? 'es-CO' : 'en-US', {
          style: 'percent',
          maximumFractionDigits: 1,
        }).format(replies.rate);
  const latest = replies.latest;
  el.replaceChildren(
    h(
      'p',
      { 'data-reply-rate': replies.rate ?? '' },
      t('replies.rate', {
        rate,
        replied: num(replies.replied),
        submitted: num(submitted),
        replies: num(replies.replies),
      }),
    ),
    h('p', { class: 'muted' }, t('replies.latest', { n: num(latest.length) })),
    table(
      [t('col.received'), t('col.from'), t('col.line'), t('col.reply'), t('col.optOut')],
      latest.map((r) => [
        when(r.receivedAt),
        h('code', {}, r.from),
        num(r.line),
        r.text,
        r.optOut ? '✓' : '',
      ]),
    ),
  );
}
