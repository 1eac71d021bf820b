// The header of the campaign list: what a team watches first (GET /api/summary,
// docs/dashboard.md "The header").

import { h } from './dom.js';
import { language, num, t, when } from './i18n.js';

export function renderSummary(el, s) {
  const rate =
    s.deliveryRate === null
      ? '—'
      : new Intl.NumberFormat(language() === 'es' ? 'es-CO' : 'en-US', {
          style: 'percent',
          maximumFractionDigits: 1,
        }).format(s.deliveryRate);
  const service =
    s.service.state === 'ok'
      ? t('summary.serviceOk')
      : s.service.state === 'unreachable'
        ? t('summary.serviceDown', { since: when(s.service.since) })
        : t('summary.serviceUnknown');
  const figure = (key, value, attrs = {}) =>
    h(
      'div',
      { class: 'figure', 'data-figure': key, ...attrs },
      h('span', { class: 'label' }, t(`summary.${key}`)),
      h('b', {}, value),
    );
  el.replaceChildren(
    figure('sending', num(s.sending)),
    figure('sentToday', num(s.sentToday)),
    figure('rate', rate),
    figure('waiting', num(s.reportsWaiting)),
    figure('service', service, { 'data-service': s.service.state }),
    // Replies that look like an opt-out and are no keyword wait for a person (docs/opt-outs.md).
    s.repliesToReview > 0
      ? figure('review', h('a', { href: '#/review' }, num(s.repliesToReview)), { 'data-review': 'waiting' })
      : figure('review', num(0)),
  );
}
