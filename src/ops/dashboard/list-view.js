// The campaign list (#/): the header, the files newest first, searched and filtered.

import { api, poll } from './api.js';
import { h } from './dom.js';
import { t, when } from './i18n.js';
import { badge, numbers, progressBar, Rates, times } from './progress.js';
import { renderSummary } from './summary.js';
import { channelName, why } from './wording.js';

export function listView(view, meta) {
  const filter = { q: '', state: '', source: '', pages: 1 };
  const rates = new Rates();
  const search = h('input', { type: 'search', placeholder: t('search'), 'aria-label': t('search') });
  const option = (value, text) => h('option', { value }, text);
  const states = h(
    'select',
    { 'aria-label': t('filter.state') },
    option('', `${t('filter.state')}: ${t('filter.all')}`),
    meta.states.map((s) => option(s, t(`state.${s}`))),
  );
  const sources = h(
    'select',
    { 'aria-label': t('filter.source') },
    option('', `${t('filter.source')}: ${t('filter.all')}`),
    meta.sources.map((s) => option(s, s)),
  );
  const summary = h('section', { class: 'summary', id: 'summary', 'aria-live': 'polite' });
  const list = h('div', { class: 'files', id: 'files' });
  const more = h('button', { type: 'button', class: 'more', hidden: true }, t('list.more'));
  const updated = h('p', { class: 'muted updated' });
  view.append(summary, h('div', { class: 'filters' }, search, states, sources), list, more, updated);

  let seq = 0;
  const refresh = async () => {
    const mine = ++seq;
    const params = new URLSearchParams({ limit: String(Math.min(50 * filter.pages, 500)) });
    if (filter.q) params.set('q', filter.q);
    if (filter.state) params.set('state', filter.state);
    if (filter.source) params.set('source', filter.source);
    const { body, res } = await api(`/api/files?${params}`);
    if (mine !== seq) return; // a newer search answered, or will
    // The list grows to 500 files; past them, the search narrows it.
    more.hidden = !res.headers.get('link') || 50 * filter.pages >= 500;
    rates.keep(new Set(body.map((m) => m.fileId)));
    list.replaceChildren(...body.map((m) => fileRow(m, rates.see(m))));
    if (body.length === 0) list.append(h('p', { class: 'empty' }, t('list.empty')));
    updated.textContent = t('updated', { at: when(new Date().toISOString()) });
  };
  let typing;
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      filter.q = search.value.trim();
      filter.pages = 1;
      void refresh().catch(() => {});
    }, 250);
  });
  for (const [select, key] of [
    [states, 'state'],
    [sources, 'source'],
  ])
    select.addEventListener('change', () => {
      filter[key] = select.value;
      filter.pages = 1;
      void refresh().catch(() => {});
    });
  more.addEventListener('click', () => {
    filter.pages++;
    void refresh().catch(() => {});
  });
  const stop = poll(refresh, 2000);
  const stopSummary = poll(async () => renderSummary(summary, (await api('/api/summary')).body), 2000);
  return () => {
    stop();
    stopSummary();
    clearTimeout(typing);
  };
}

function fileRow(m, speed) {
  return h(
    'a',
    {
      class: 'file',
      href: `#/file/${encodeURIComponent(m.fileId)}`,
      'data-file-id': m.fileId,
      'data-state': m.state,
    },
    h(
      'div',
      { class: 'title' },
      h('strong', { class: 'name' }, m.name),
      h('code', {}, m.fileId),
      h('span', { class: 'source' }, `${m.source} · ${channelName(m)}`),
      times(m),
    ),
    h('div', { class: 'status' }, badge(m.state), h('span', { class: 'why' }, why(m))),
    h('div', { class: 'progress' }, progressBar(m), numbers(m, speed)),
  );
}
