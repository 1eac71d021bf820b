// Micro-benchmark of the per-recipient hot path: `node bench/numbers-micro.ts`.
// Not part of `npm run bench` (which times whole processes); prints ns/op to stdout.
import { makeNumberRules, normalizeNumber } from '../src/format/numbers.ts';
import { countSegments } from '../src/format/segments.ts';

const rules = makeNumberRules();

function time(label: string, n: number, run: () => number): void {
  run(); // warm-up: let the JIT settle on the same shapes the timed run sees
  const t0 = process.hrtime.bigint();
  const sink = run();
  const ns = Number(process.hrtime.bigint() - t0);
  console.log(`${label.padEnd(58)} ${(ns / n).toFixed(1).padStart(8)} ns/op  (${n} ops, check ${sink})`);
}

// Deterministic inputs; generated before timing so only the function under test is measured.
let seed = 42;
function rnd(n: number): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
}
function digits(k: number): string {
  let s = '';
  for (let i = 0; i < k; i++) s += String(rnd(10));
  return s;
}

const M = 1_000_000;
const co10: string[] = [];
const co12: string[] = [];
const coMixed: string[] = [];
for (let i = 0; i < M; i++) {
  const d = '3' + String(rnd(3)) + digits(8);
  co10.push(d);
  co12.push('57' + d);
  const f = i % 4;
  coMixed.push(
    f === 0
      ? d
      : f === 1
        ? '57' + d
        : f === 2
          ? `+57 ${d.slice(0, 3)} ${d.slice(3, 6)} ${d.slice(6)}`
          : `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`,
  );
}
// Flatten so the strings are what a decoder would hand over, not concatenation ropes.
for (const a of [co10, co12, coMixed]) for (let i = 0; i < a.length; i++) a[i] = a[i]!.split('').join('');

const K = 100_000;
const intl: string[] = [];
const prefixes = ['+52 55', '+52 1 55', '+34 6', '+44 7400', '+1 202', '+49 151', '+33 6'];
for (let i = 0; i < K; i++) {
  const p = prefixes[i % prefixes.length]!;
  const rest = p === '+34 6' || p === '+33 6' ? 8 : p === '+44 7400' ? 6 : p === '+1 202' ? 7 : 8;
  intl.push(`${p}${digits(rest)}`);
}

const words = [
  'Hola',
  'su',
  'cita',
  'es',
  'mañana',
  'a',
  'las',
  '10:00',
  'en',
  'la',
  'sede',
  'norte.',
  'Recuerde',
  'traer',
  'documento',
  'pedido',
  '#123',
  'llega',
  'hoy',
  'información',
  'aquí',
  'día',
  'Responda',
  'SALIR',
  'gracias',
  'por',
  'su',
  'compra',
  '€',
];
const msgs: string[] = [];
for (let i = 0; i < 1000; i++) {
  let m = '';
  while (m.length < 100) m += words[rnd(words.length)] + ' ';
  msgs.push(m.slice(0, 100));
}
const ucs2Share = msgs.filter((m) => countSegments(m).encoding === 'ucs2').length / msgs.length;

function numbers(list: string[]): () => number {
  return () => {
    let okCount = 0;
    for (let i = 0; i < list.length; i++) if (normalizeNumber(list[i]!, rules).ok) okCount++;
    return okCount;
  };
}

time('normalizeNumber, 1M Colombian 10 digits (3001234567)', M, numbers(co10));
time('normalizeNumber, 1M Colombian 12 digits (573001234567)', M, numbers(co12));
time('normalizeNumber, 1M Colombian mixed formats (+57 …, (300) …)', M, numbers(coMixed));
// First pass fills the cache (bounded at 10k, so most of 100k distinct numbers miss).
seed = 7;
time('normalizeNumber, 100k international (distinct, cold cache)', K, numbers(intl));
const repeated = intl.slice(0, 5000);
const rep: string[] = [];
for (let i = 0; i < K; i++) rep.push(repeated[i % repeated.length]!);
time('normalizeNumber, 100k international (5k distinct, cached)', K, numbers(rep));
time(`countSegments, 1M 100-char Spanish messages (${Math.round(ucs2Share * 100)}% UCS-2)`, M, () => {
  let total = 0;
  for (let i = 0; i < M; i++) total += countSegments(msgs[i % msgs.length]!).segments;
  return total;
});
