// The delivery-report chart of a campaign's page: cumulative reports by minute (uPlot), each
// axis as wide as its longest label (docs/dashboard.md "Pages").

import { h } from './dom.js';
import { dateTime, num, t } from './i18n.js';
import uPlot from './uplot.js';

/** Cumulative delivery reports by minute, drawn with uPlot; the totals written below it. */
export function renderChart(box, totals, minutes, chart) {
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
          // Room between ticks for a label such as `28/11/2026, 6:16 p. m.` (two digits more
          // than it had with `28/11/26`); seconds when the ticks are less than a minute apart.
          space: 125,
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
  const today = d.toDateString() === new Date().toDateString();
  return dateTime(d, { seconds: withSeconds, day: !today });
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
