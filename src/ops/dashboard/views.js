// The dashboard's pages, built with DOM calls (text is always set as text: a file name or a
// reason can never become markup). Each view returns a function that stops its polling.

import { codeText, duration, has, language, num, t, when, whenIn } from './i18n.js';
import uPlot from './uplot.js';

const FINAL = new Set(['rejected', 'duplicate', 'completed', 'cancelled']);
/** States whose reason says why the file is not moving (the others' reasons are history). */
const WHY = new Set(['rejected', 'duplicate', 'scheduled', 'paused', 'partial', 'cancelled']);
const ACTIONS = ['pause', 'resume', 'cancel', 'retry'];

// ---- helpers --------------------------------------------------------------------------

/** An element with attributes (`text` sets its text, `on…` adds a listener) and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    // CSSOM, not a style attribute: the page's CSP allows no inline styles.
    else if (k === 'style') Object.assign(el.style, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Number.POSITIVE_INFINITY)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export class Unauthorized extends Error {}

/** A JSON request to the ops API; its answer's body, or an Error with the API's message. */
export async function api(path, init = {}) {
  const res = await fetch(path, { credentials: 'same-origin', ...init });
  if (res.status === 401) throw new Unauthorized('login required');
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error(body?.error ?? `${res.status} ${res.statusText}`);
    err.status = res.status;
    // The refusal's code and parameters: errorText words it in the page's language.
    err.code = body?.code;
    err.params = body?.params ?? {};
    throw err;
  }
  return { body, res };
}

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
function worded(w) {
  if (!w) return '';
  if (has(`reason.${w.code}`)) return t(`reason.${w.code}`, shown(w.params));
  return rejectionText(w.code, w.params);
}

let onUnauthorized = () => {};
/** What to do when the API asks for the token (the app shows the login form). */
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

let noticeTimer;
export function notice(text, kind = 'error') {
  const el = document.getElementById('notice');
  el.textContent = text;
  el.className = kind;
  el.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => {
    el.hidden = true;
  }, 10_000);
}

/** Runs `fn` now and again `ms` after each run ends (ms may be a function); returns stop. */
function poll(fn, ms) {
  let stopped = false;
  let timer;
  const tick = async () => {
    try {
      await fn();
    } catch (err) {
      if (err instanceof Unauthorized) {
        stopped = true;
        onUnauthorized();
        return;
      }
      notice(t('error.generic', { error: errorText(err) }));
    }
    if (!stopped) timer = setTimeout(tick, typeof ms === 'function' ? ms() : ms);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

function confirmed(text) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
  });
}

function badge(state) {
  return h('span', { class: `badge state-${state}`, 'data-state': state }, t(`state.${state}`));
}

/** Why the file is where it is: its rejection, its schedule, what it waits on, or its state's reason. */
function why(m) {
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

/** When the file arrived and, once it is done, when it finished (docs/dashboard.md). */
function times(m) {
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

function progressBar(m) {
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
class Rates {
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

function numbers(m, speed) {
  const c = m.counts;
  const items = [
    [t('read'), c.records],
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

// ---- campaigns ------------------------------------------------------------------------

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

/** The header: what a team watches first (GET /api/summary, docs/dashboard.md "The header"). */
function renderSummary(el, s) {
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
  );
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

/** The channel a campaign goes out on, as the service names it (the same in both languages). */
function channelName(m) {
  const name = { sms: 'SMS', rcs: 'RCS', email: 'Email', whatsapp: 'WhatsApp' }[m.channel] ?? 'SMS';
  return m.flash ? `${name} flash` : name;
}

// ---- one campaign ---------------------------------------------------------------------

export function fileView(view, fileId, meta) {
  const head = h('div', { class: 'file-head' });
  const actions = h('div', { class: 'actions' });
  const funnel = h('div', { class: 'funnel', id: 'funnel' });
  const chartBox = h('div', { class: 'chart', id: 'chart' });
  const totals = h('p', { class: 'totals', id: 'chart-totals' });
  const errors = h('div', { id: 'errors' });
  const chunks = h('div', { id: 'chunks' });
  const cost = h('div', { id: 'cost' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline' });
  const downloads = h('div', { class: 'downloads', id: 'downloads' });
  const section = (title, ...body) => h('section', {}, h('h2', {}, title), ...body);
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
              if (err instanceof Unauthorized) return onUnauthorized();
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
    ['records', c.records],
    ['valid', c.valid],
    ['submitted', c.submitted],
    ['delivered', c.delivered],
    ...(c.accepted ? [['accepted', c.accepted]] : []),
    ['undelivered', c.undelivered],
    ['unknown', c.unknown],
    ['pending', c.pendingDelivery],
    ...(c.cancelled ? [['cancelled', c.cancelled]] : []),
  ];
  const top = Math.max(c.records, 1);
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

/** Cumulative delivery reports by minute, drawn with uPlot; the totals written below it. */
function renderChart(box, totals, minutes, chart) {
  const sum = { delivered: 0, undelivered: 0, unknown: 0 };
  for (const m of minutes) for (const k of Object.keys(sum)) sum[k] += m[k];
  totals.textContent = t('file.totals', {
    delivered: num(sum.delivered),
    undelivered: num(sum.undelivered),
    unknown: num(sum.unknown),
  });
  for (const [k, v] of Object.entries(sum)) totals.dataset[k] = String(v);
  if (minutes.length === 0) {
    chart?.destroy();
    box.replaceChildren(h('p', { class: 'muted' }, t('file.noDeliveries')));
    return null;
  }
  // Each minute's reports counted at its end; the line starts from zero at the first minute.
  const xs = [Date.parse(minutes[0].minute) / 1000];
  const ys = { delivered: [0], undelivered: [0], unknown: [0] };
  const run = { delivered: 0, undelivered: 0, unknown: 0 };
  for (const m of minutes) {
    xs.push(Date.parse(m.minute) / 1000 + 60);
    for (const k of Object.keys(run)) {
      run[k] += m[k];
      ys[k].push(run[k]);
    }
  }
  const data = [xs, ys.delivered, ys.undelivered, ys.unknown];
  // A language change draws the whole view again: its chart is a new one.
  if (chart) {
    chart.setData(data);
    return chart;
  }
  box.replaceChildren();
  const drawn = new uPlot(
    {
      width: Math.max(box.clientWidth, 280),
      height: 220,
      scales: { x: { time: true } },
      // Room on the right for half the last time label (centred on its tick at the edge).
      padding: [null, lastTickRoom(xs.at(-1)), null, null],
      axes: [
        {
          font: AXIS_FONT,
          // Room between ticks for a label such as `28/11/26, 6:16 p. m.`; seconds when the
          // ticks are less than a minute apart.
          space: 110,
          values: (_, splits, _i, _space, incr) => splits.map((v) => timeTick(v, incr < 60)),
          size: fitted,
        },
        { font: AXIS_FONT, values: (_, splits) => splits.map((v) => num(v)), size: fitted },
      ],
      series: [
        { label: t('chart.time'), value: (_, v) => (v === null ? '' : timeTick(v)) },
        { label: t('delivered'), stroke: '#2e7d32', fill: 'rgba(46,125,50,0.12)', width: 2 },
        { label: t('undelivered'), stroke: '#c62828', width: 2 },
        { label: t('unknown'), stroke: '#757575', width: 2 },
      ],
    },
    data,
    box,
  );
  // For the browser test: it reads the axes' sizes and labels as uPlot drew them.
  box.uplot = drawn;
  return drawn;
}

const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
let measure;
/** Half the width of the latest time's label, and some air (CSS pixels). */
function lastTickRoom(lastX) {
  measure ??= document.createElement('canvas').getContext('2d');
  measure.font = AXIS_FONT;
  return Math.ceil(measure.measureText(timeTick(lastX, true)).width / 2) + 6;
}

/** A time in the page's language: the hour and minute (and second), the day when it is not today. */
function timeTick(seconds, withSeconds = false) {
  const d = new Date(seconds * 1000);
  const locale = language() === 'es' ? 'es-CO' : 'en-US';
  const today = d.toDateString() === new Date().toDateString();
  const timeStyle = withSeconds ? 'medium' : 'short';
  return new Intl.DateTimeFormat(locale, today ? { timeStyle } : { dateStyle: 'short', timeStyle }).format(d);
}

/**
 * An axis as wide (y) or tall (x) as its longest label needs: uPlot's fixed 50 px cut
 * `200,000` to `0,000` (issue 33). Measured with the axis' own font; settled after one pass.
 */
function fitted(self, values, axisIdx, cycleNum) {
  const axis = self.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  const size = axis.ticks.size + axis.gap;
  const longest = (values ?? []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), '');
  if (longest === '') return size + 10;
  self.ctx.font = axis.font[0];
  const m = self.ctx.measureText(longest);
  // Width for the y axis; for the x axis, the text's height (and a little air).
  const across = axisIdx === 0 ? m.actualBoundingBoxAscent + m.actualBoundingBoxDescent : m.width;
  return Math.ceil(across / devicePixelRatio) + size + 8;
}

function table(headers, rows) {
  return h(
    'div',
    { class: 'table' },
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((x) => h('th', {}, x)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((r) =>
          h(
            'tr',
            {},
            r.map((x) => h('td', {}, x)),
          ),
        ),
      ),
    ),
  );
}

function renderErrors(el, errors) {
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

function renderChunks(el, c) {
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
function renderCost(el, cost) {
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

function renderDownloads(el, m) {
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

// ---- check a file ---------------------------------------------------------------------

export function checkView(view, meta) {
  const source = h(
    'select',
    { id: 'check-source', name: 'source' },
    meta.sources.map((s) => h('option', { value: s }, s)),
  );
  const input = h('input', { type: 'file', id: 'check-file', accept: '.txt,text/plain', required: true });
  const button = h('button', { type: 'submit', class: 'primary' }, t('check.submit'));
  const result = h('div', { id: 'check-result', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'check' },
    h('label', {}, t('check.source'), source),
    h('label', {}, t('check.file'), input),
    button,
  );
  view.append(h('h1', {}, t('check.title')), h('p', { class: 'muted' }, t('check.text')), form, result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const file = input.files[0];
    if (!file) return;
    button.disabled = true;
    result.replaceChildren(h('p', { class: 'muted' }, t('check.busy')));
    try {
      const params = new URLSearchParams({ source: source.value, name: file.name });
      const { body } = await api(`/api/validate?${params}`, {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: file,
      });
      renderCheck(result, body);
    } catch (err) {
      if (err instanceof Unauthorized) return onUnauthorized();
      result.replaceChildren(h('p', { class: 'error' }, errorText(err)));
    } finally {
      button.disabled = false;
    }
  });
  return () => {};
}

function renderCheck(el, s) {
  const verdict = s.accepted
    ? h('p', { class: 'verdict ok', 'data-accepted': 'true' }, t('check.accepted'))
    : h(
        'div',
        { class: 'verdict bad', 'data-accepted': 'false' },
        h('p', {}, t('check.rejected', { code: s.rejection.code })),
        h('p', {}, rejectionText(s.rejection.code, s.rejection.params)),
        h('p', { class: 'muted' }, codeText(s.rejection.code, 'hint')),
      );
  const counts = ['records', 'valid', 'invalid', 'duplicates', 'suppressed', 'segments'];
  const sep = s.separator === null ? '—' : s.separator === '\t' ? 'TAB' : s.separator;
  el.replaceChildren(
    verdict,
    h(
      'dl',
      { class: 'counts' },
      counts.map((k) => [h('dt', {}, t(k)), h('dd', { 'data-count': k }, num(s[k]))]),
      [h('dt', {}, t('check.layout')), h('dd', {}, s.layout ? t(`layout.${s.layout}`) : '—')],
      [h('dt', {}, t('check.encoding')), h('dd', {}, s.encoding ?? '—')],
      [h('dt', {}, t('check.separator')), h('dd', {}, sep)],
    ),
    s.errors.length
      ? h(
          'section',
          {},
          h('h2', {}, t('check.errors')),
          table(
            [t('col.line'), t('col.code'), t('col.message'), t('col.value')],
            s.errors
              .slice(0, 20)
              .map((e) => [
                String(e.line),
                h('code', {}, e.code),
                codeText(e.code, 'message'),
                e.value ?? '',
              ]),
          ),
        )
      : '',
    s.warnings.length
      ? h(
          'section',
          {},
          h('h2', {}, t('check.warnings')),
          table(
            [t('col.line'), t('col.code'), t('col.message')],
            s.warnings
              .slice(0, 20)
              .map((e) => [String(e.line), h('code', {}, e.code), codeText(e.code, 'message')]),
          ),
        )
      : '',
  );
}

// ---- service health -------------------------------------------------------------------

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

// ---- login ----------------------------------------------------------------------------

export function loginView(view, done) {
  const input = h('input', {
    type: 'password',
    id: 'token',
    autocomplete: 'current-password',
    required: true,
  });
  const error = h('p', { class: 'error', role: 'alert' });
  const form = h(
    'form',
    { class: 'login' },
    h('h1', {}, t('login.title')),
    h('p', { class: 'muted' }, t('login.text')),
    h('label', {}, t('login.token'), input),
    h('button', { type: 'submit', class: 'primary' }, t('login.submit')),
    error,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const res = await fetch('/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: input.value }),
    });
    if (res.ok) done();
    else error.textContent = t('login.wrong');
  });
  view.append(form);
  input.focus();
  return () => {};
}
