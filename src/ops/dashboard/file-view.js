// One campaign's page (#/file/<fileId>): its head and actions, the funnel, the chart, the
// sections below and the timeline, refreshed until the file is done.

import { api, poll, Unauthorized, unauthorized } from './api.js';
import { renderChart } from './chart.js';
import { h } from './dom.js';
import { renderChunks, renderCost, renderDownloads, renderErrors, renderReplies } from './file-sections.js';
import { num, t, when } from './i18n.js';
import { confirmed, notice } from './notice.js';
import { badge, FINAL, numbers, progressBar, Rates, recipientsRead } from './progress.js';
import { channelName, errorText, why, worded } from './wording.js';

const ACTIONS = ['pause', 'resume', 'cancel', 'retry'];

export function fileView(view, fileId, meta) {
  const head = h('div', { class: 'file-head' });
  const actions = h('div', { class: 'actions' });
  const funnel = h('div', { class: 'funnel', id: 'funnel' });
  const chartBox = h('div', { class: 'chart', id: 'chart' });
  const totals = h('p', { class: 'totals', id: 'chart-totals' });
  const errors = h('div', { id: 'errors' });
  const chunks = h('div', { id: 'chunks' });
  const cost = h('div', { id: 'cost' });
  const replies = h('div', { id: 'replies' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  const downloads = h('div', { class: 'downloads', id: 'downloads' });
  const section = (title, ...body) => h('section', {}, h('h2', {}, title), ...body);
  // Shown for a campaign sent from a short code only (renderReplies).
  const repliesSection = section(t('file.replies'), replies);
  repliesSection.hidden = true;
  view.append(
    h('a', { href: '#/', class: 'back' }, t('file.back')),
    head,
    actions,
    h(
      'div',
      { class: 'grid' },
      section(t('file.funnel'), funnel),
      section(t('file.deliveries'), chartBox, totals),
      section(t('file.errors'), errors),
      section(t('file.chunks'), chunks),
      section(t('file.cost'), cost),
      repliesSection,
      section(t('file.timeline'), timeline),
      section(t('file.downloads'), downloads),
    ),
  );
  const rates = new Rates();
  const path = `/api/files/${encodeURIComponent(fileId)}/activity`;
  let chart = null;
  let last = null;
  let stopped = false;
  let seq = 0;
  const refresh = async () => {
    const mine = ++seq;
    let activity;
    try {
      ({ body: activity } = await api(path));
    } catch (err) {
      if (err.status !== 404) throw err;
      if (!stopped) head.replaceChildren(h('p', {}, t('file.notFound', { fileId })));
      return;
    }
    // A page left, or a newer answer (an action's own refresh) drawn already.
    if (stopped || mine !== seq) return;
    const manifest = activity.manifest;
    last = manifest;
    renderHead(head, manifest, rates.see(manifest));
    renderActions(actions, manifest, activity.actions, meta, refresh);
    renderFunnel(funnel, manifest.counts);
    chart = renderChart(chartBox, totals, activity.deliveries, chart);
    renderErrors(errors, activity.errors);
    renderChunks(chunks, manifest.counts);
    timeline.replaceChildren(
      ...activity.events.map((e) =>
        h(
          'li',
          {},
          h('time', { datetime: e.at }, when(e.at)),
          badge(e.state),
          e.reasonCode ? ` ${worded(e.reasonCode)}` : '',
        ),
      ),
    );
    renderDownloads(downloads, manifest);
    renderCost(cost, manifest.cost);
    renderReplies(repliesSection, replies, activity.replies ?? null, manifest.counts.submitted);
  };
  const resize = () => chart?.setSize({ width: chartBox.clientWidth, height: 220 });
  window.addEventListener('resize', resize);
  const stop = poll(refresh, () =>
    last && FINAL.has(last.state) && last.counts.pendingDelivery === 0 ? 10_000 : 2000,
  );
  return () => {
    stopped = true;
    stop();
    window.removeEventListener('resize', resize);
    chart?.destroy();
  };
}

function renderHead(el, m, speed) {
  el.replaceChildren(
    h('h1', {}, m.name),
    h(
      'p',
      { class: 'meta' },
      h('code', {}, m.fileId),
      ` · ${m.source} · ${channelName(m)}`,
      m.worker ? ` · ${t('file.worker', { worker: m.worker })}` : '',
    ),
    h('p', { class: 'status' }, badge(m.state), h('span', { class: 'why' }, why(m))),
    h('div', { class: 'progress' }, progressBar(m), numbers(m, speed)),
  );
}

function renderActions(el, m, allowed, meta, refresh) {
  el.replaceChildren(
    ...ACTIONS.map((action) =>
      h(
        'button',
        {
          type: 'button',
          'data-action': action,
          disabled: !meta.actions || !allowed.includes(action),
          onclick: async () => {
            if (!(await confirmed(t(`confirm.${action}`, { name: m.name })))) return;
            try {
              const { body } = await api(`/api/files/${encodeURIComponent(m.fileId)}/${action}`, {
                method: 'POST',
              });
              notice(t('action.done', { state: t(`state.${body.state}`) }), 'ok');
            } catch (err) {
              if (err instanceof Unauthorized) return unauthorized();
              notice(errorText(err));
            }
            await refresh().catch(() => {});
          },
        },
        t(`action.${action}`),
      ),
    ),
  );
}

function renderFunnel(el, c) {
  const steps = [
    ['recipients', recipientsRead(c)],
    ['valid', c.valid],
    ['submitted', c.submitted],
    ['delivered', c.delivered],
    ...(c.accepted ? [['accepted', c.accepted]] : []),
    ['undelivered', c.undelivered],
    ['unknown', c.unknown],
    ['pending', c.pendingDelivery],
    ...(c.cancelled ? [['cancelled', c.cancelled]] : []),
  ];
  // From the recipients read, so no later step is wider than the first.
  const top = Math.max(recipientsRead(c), 1);
  el.replaceChildren(
    ...steps.map(([key, value]) =>
      h(
        'div',
        { class: `step ${key}`, 'data-step': key, 'data-value': value },
        h('span', { class: 'label' }, t(key)),
        h(
          'span',
          { class: 'track' },
          h('span', { class: 'fill', style: { width: `${(100 * value) / top}%` } }),
        ),
        h('span', { class: 'value' }, num(value)),
      ),
    ),
  );
}
