// What the email bench (bench/email.bench.ts) and its floor (bench/floor-email.ts) share: the
// sender, the source's HTML body, and the headed email drop file (docs/format.md "Email files": an
// address column and two fields, the subject from the file's `#! subject:`).
import { once } from 'node:events';
import { createWriteStream, existsSync } from 'node:fs';

export const FROM = 'avisos@empresa.co';
export const SUBJECT = 'Hola {{nombre}}';
/** The source's html body: a plain transactional email, placeholders left for the service. */
export const HTML = [
  '<!doctype html><html><body style="font-family:sans-serif">',
  '<p>Hola {{nombre}},</p>',
  '<p>Su factura de este mes ya está disponible. Puede consultarla y pagarla en la app o en',
  'cualquiera de nuestras oficinas de {{ciudad}} antes del día 15.</p>',
  '<p>Si ya realizó el pago, ignore este mensaje.</p>',
  '<p>Atentamente,<br>Servicio al cliente</p>',
  '</body></html>',
].join('\n');

const CITIES = ['Bogotá', 'Medellín', 'Cali', 'Barranquilla', 'Cartagena', 'Bucaramanga', 'Pereira'];

/** A headed email drop file of `lines` distinct recipients (kept between runs). */
export async function generateEmail(path: string, lines: number): Promise<void> {
  if (existsSync(path)) return;
  const ws = createWriteStream(path);
  let buf = `#! channel: email\n#! subject: ${SUBJECT}\nemail;nombre;ciudad\n`;
  for (let i = 0; i < lines; i++) {
    buf += `cliente${i}@example.com;Cliente ${i};${CITIES[i % CITIES.length]}\n`;
    if (buf.length > 1 << 20) {
      if (!ws.write(buf)) await once(ws, 'drain');
      buf = '';
    }
  }
  ws.end(buf);
  await once(ws, 'finish');
}
