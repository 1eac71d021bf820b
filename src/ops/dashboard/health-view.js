// Service health (#/health): the messaging service's monitoring endpoints by account, shown
// as the service answers them (their fields are not documented).

import { api, poll } from './api.js';
import { h, table } from './dom.js';
import { num, t, when } from './i18n.js';

export function healthView(view) {
  const body = h('div', { id: 'health' }, h('p', { class: 'muted' }, t('health.none')));
  view.append(h('h1', {}, t('health.title')), h('p', { class: 'muted' }, t('health.text')), body);
  return poll(async () => {
    const { body: accounts } = await api('/api/service-health');
    body.replaceChildren(
      ...accounts.map((a) =>
        h(
          'section',
          { class: 'account', 'data-account': a.account },
          h('h2', {}, t('health.account', { account: a.account })),
          h('p', { class: 'muted' }, t('updated', { at: when(a.checkedAt) })),
          a.endpoints.map((e) =>
            h(
              'div',
              { class: `endpoint ${e.ok ? 'ok' : 'bad'}`, 'data-endpoint': e.name },
              h(
                'h3',
                {},
                h('code', {}, e.path),
                ' ',
                e.ok ? t('health.ok', { ms: num(Math.round(e.ms)) }) : t('health.failed', { error: e.error }),
              ),
              e.ok ? data(e.data, 0) : '',
            ),
          ),
        ),
      ),
    );
  }, 30_000);
}

/** Whatever JSON the service answers (its fields are not documented), as tables and lists. */
function data(value, depth) {
  if (value === null || value === undefined) return h('span', { class: 'muted' }, '—');
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every((v) => v && typeof v === 'object' && !Array.isArray(v))) {
      const keys = [...new Set(value.flatMap((v) => Object.keys(v)))].slice(0, 10);
      return table(
        keys,
        value.slice(0, 100).map((v) => keys.map((k) => scalar(v[k]))),
      );
    }
    return h('span', {}, value.map(scalar).join(', '));
  }
  if (typeof value === 'object' && depth < 3)
    return h(
      'dl',
      { class: 'data' },
      Object.entries(value).map(([k, v]) => [h('dt', {}, k), h('dd', {}, data(v, depth + 1))]),
    );
  return h('span', {}, scalar(value));
}

function scalar(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return num(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
