// The dashboard's words in Spanish and English. A change of text is a change here, nothing
// to build. Keys missing in one language fall back to English.

import { es as codesEs } from './codes.js';

const en = {
  'nav.campaigns': 'Campaigns',
  'nav.check': 'Check a file',
  'nav.health': 'Service health',
  logout: 'Log out',
  'login.title': 'Log in',
  'login.text': 'This dropline asks for its ops token (ops.token in its configuration).',
  'login.token': 'Ops token',
  'login.submit': 'Log in',
  'login.wrong': 'Wrong token.',
  search: 'Search by name or fileId',
  'filter.state': 'State',
  'filter.source': 'Source',
  'filter.all': 'All',
  'list.empty': 'No files yet. Drop a .txt file into a source’s inbox.',
  'list.more': 'Show older files',
  'col.file': 'File',
  'col.state': 'State',
  'col.progress': 'Progress',
  // What a file counts first: its recipients (a bulk line of three numbers is three), the
  // figure its rejection names (`3 of 4 recipients`); records are lines that hold numbers.
  recipients: 'recipients read',
  valid: 'valid',
  sent: 'sent',
  delivered: 'delivered',
  undelivered: 'undelivered',
  unknown: 'unknown',
  accepted: 'accepted (no delivery reports)',
  pending: 'pending',
  records: 'records (lines with numbers)',
  submitted: 'submitted',
  invalid: 'invalid',
  duplicates: 'duplicates',
  suppressed: 'suppressed',
  noConsent: 'of which without consent',
  segments: 'segments',
  rejected: 'rejected by the service',
  failed: 'failed',
  inDoubt: 'in doubt',
  cancelled: 'cancelled (never sent)',
  rate: '{rate}/s',
  eta: 'about {eta} left',
  'since.scheduled': 'starts {at}',
  'detail.SERVICE_UNREACHABLE': 'service unreachable since {since}, retrying',
  'file.back': '← Campaigns',
  'file.funnel': 'Funnel',
  'file.deliveries': 'Delivery reports over time',
  'file.noDeliveries': 'No delivery reports yet.',
  'file.totals': 'Reports received: {delivered} delivered, {undelivered} undelivered, {unknown} unknown',
  'file.errors': 'Errors by code',
  'file.noErrors': 'No invalid lines.',
  'file.chunks': 'Chunks',
  'file.timeline': 'Timeline',
  'file.downloads': 'Downloads',
  'file.pruned': 'Its recipients were removed by retention on {at}; its counts remain.',
  'file.worker': 'Worker {worker}',
  'file.notFound': 'No file {fileId}.',
  'file.replies': 'Replies',
  'replies.rate': 'Reply rate: {rate} ({replied} of {submitted} recipients replied; {replies} replies).',
  'replies.none': 'No replies yet.',
  'replies.latest': 'The latest {n}, newest first:',
  'col.from': 'From',
  'col.reply': 'Reply',
  'col.received': 'Received',
  'col.optOut': 'Opt-out',
  'col.code': 'Code',
  'col.count': 'Count',
  'col.hint': 'What to do',
  'col.lines': 'First lines',
  'col.line': 'Line',
  'col.message': 'Message',
  'col.value': 'Value',
  'col.country': 'Country',
  'col.segments': 'Segments',
  'file.cost': 'Cost in segments',
  'file.noCost': 'Known once the file is read.',
  'cost.gsm7': 'Sent transliterated to GSM-7: {gsm7} segments instead of {written} as written.',
  'cost.never':
    'As written: {written} segments; transliterated to GSM-7 (transliterate: "gsm7") it would cost {gsm7}.',
  'col.when': 'When',
  'col.reason': 'Reason',
  'chunk.pending': 'to send',
  'chunk.accepted': 'accepted',
  'chunk.rejected': 'rejected',
  'chunk.failed': 'failed',
  'chunk.inDoubt': 'in doubt',
  'chunk.cancelled': 'cancelled (never sent)',
  'chunk.total': 'total',
  'action.pause': 'Pause',
  'action.resume': 'Resume',
  'action.cancel': 'Cancel',
  'action.retry': 'Retry',
  'confirm.pause': 'Pause “{name}”? Sending stops after the chunk in flight.',
  'confirm.resume': 'Resume “{name}”?',
  'confirm.cancel': 'Cancel “{name}”? Recipients not sent yet will never be sent. This cannot be undone.',
  'confirm.retry':
    'Resend the failed and in-doubt chunks of “{name}”? In-doubt recipients may get the message twice.',
  'confirm.yes': 'Yes',
  'confirm.no': 'No',
  'action.done': 'Done: the file is {state}.',
  'check.title': 'Check a file before dropping it',
  'check.text':
    'The file is checked here with the chosen source’s rules, as dropline validate --source does. Nothing is stored, nothing is sent.',
  'check.source': 'Source',
  'check.file': 'File',
  'check.submit': 'Check',
  'check.busy': 'Checking…',
  'check.accepted': 'Accepted: it would be sent.',
  'check.rejected': 'Rejected: {code}',
  'check.layout': 'Layout',
  'check.encoding': 'Encoding',
  'check.separator': 'Separator',
  'check.errors': 'First errors',
  'check.warnings': 'Warnings',
  'health.title': 'Messaging service health',
  'health.text': 'The service’s monitoring endpoints, last 15 minutes, per account.',
  'health.account': 'Account {account}',
  'health.ok': 'answered in {ms} ms',
  'health.failed': 'failed: {error}',
  'health.none': 'No answer yet.',
  'error.generic': 'Something went wrong: {error}',
  updated: 'updated {at}',
  'state.waiting': 'waiting',
  'state.validating': 'validating',
  'state.rejected': 'rejected',
  'state.duplicate': 'duplicate',
  'state.scheduled': 'scheduled',
  'state.sending': 'sending',
  'state.paused': 'paused',
  'state.submitted': 'submitted',
  'state.completed': 'completed',
  'state.partial': 'partial',
  'state.cancelled': 'cancelled',
  // Issue 33: codes and their parameters worded here (docs/dashboard.md "Codes and languages").
  'reason.PAUSED_BY_DASHBOARD': 'paused from the dashboard',
  'reason.PAUSED_BY_USER': 'paused by a user',
  'reason.RESUMED_BY_DASHBOARD': 'resumed from the dashboard',
  'reason.RESUMED_BY_USER': 'resumed by a user',
  'reason.CANCELLED_BY_DASHBOARD': 'cancelled from the dashboard',
  'reason.CANCELLED_BY_USER': 'cancelled by a user',
  'reason.SCHEDULED_WINDOW': 'outside the send window: starts {at} ({zone})',
  'reason.SCHEDULED_SEND_AT': 'the file’s sendAt: starts {at} ({zone})',
  'reason.WINDOW_NEVER_OPENS': 'the send window never opens in the next 400 days: check sendWindow',
  'reason.PARTIAL': '{failed} chunk(s) failed, {inDoubt} in doubt: the Retry button resends them',
  'reason.ACCOUNT_REFUSED': 'the messaging service refused the account: {text}',
  'reason.TEXT': '{text}',
  'rejection.line': 'line {line}: {message}',
  'rejection.TOO_MANY_INVALID':
    '{invalid} of {judged} recipients are invalid ({percent} %; the limit is {limit} %)',
  'rejection.DUPLICATE_FILE': 'the same content was already sent from this source as {name} ({state})',
  'rejection.FILE_TOO_LARGE': 'the file is larger than {max} bytes (maxFileBytes): {bytes} bytes or more',
  'error.FILE_STATE': 'the file is {state}; {action} applies to a file that is {from}',
  'error.NOTHING_TO_RETRY': 'no failed or in-doubt chunk to resend',
  'error.BUSY': 'a worker is sending this file right now; try again in a moment',
  or: ' or ',
  'chart.time': 'Time',
  'layout.personalized': 'personalized',
  'layout.bulk': 'bulk',
  'list.arrived': 'arrived {at}',
  'list.finished': 'finished {at}',
  'summary.sending': 'Files sending',
  'summary.sentToday': 'Sent today',
  'summary.rate': 'Delivery rate today',
  'summary.waiting': 'Reports waiting',
  'summary.service': 'Messaging service',
  'summary.serviceOk': 'answering',
  'summary.serviceDown': 'unreachable since {since}',
  'summary.serviceUnknown': 'not asked yet',
  'summary.review': 'Replies to review',
  'review.title': 'Replies to review',
  'review.text':
    'Replies that read like a request to stop but are no keyword (“no me escriban más”, “stop please”). Nothing was applied: the numbers are still sent to until someone decides (dropline optouts <number> --opt-out).',
  'review.none': 'No reply to review.',
  'review.received': 'Received',
  'review.from': 'From',
  'review.to': 'To (short code)',
  'review.reply': 'Reply',
  'http.413': 'The dashboard checks files of up to 64 MB; use dropline validate --source for larger ones.',
  'http.408': 'The file did not arrive in time; check it again, or use dropline validate --source.',
  'http.429': 'Two files are being checked already; try again in a moment.',
};

const es = {
  'nav.campaigns': 'Campañas',
  'nav.check': 'Revisar un archivo',
  'nav.health': 'Estado del servicio',
  logout: 'Cerrar sesión',
  'login.title': 'Iniciar sesión',
  'login.text': 'Este dropline pide su token de operación (ops.token en su configuración).',
  'login.token': 'Token de operación',
  'login.submit': 'Entrar',
  'login.wrong': 'Token incorrecto.',
  search: 'Buscar por nombre o fileId',
  'filter.state': 'Estado',
  'filter.source': 'Origen',
  'filter.all': 'Todos',
  'list.empty': 'Aún no hay archivos. Deje un archivo .txt en la bandeja de entrada de un origen.',
  'list.more': 'Ver archivos anteriores',
  'col.file': 'Archivo',
  'col.state': 'Estado',
  'col.progress': 'Avance',
  recipients: 'destinatarios leídos',
  valid: 'válidos',
  sent: 'enviados',
  delivered: 'entregados',
  undelivered: 'no entregados',
  unknown: 'desconocidos',
  accepted: 'aceptados (sin reportes de entrega)',
  pending: 'pendientes',
  records: 'registros (líneas con números)',
  submitted: 'enviados al servicio',
  invalid: 'inválidos',
  duplicates: 'duplicados',
  suppressed: 'excluidos',
  noConsent: 'de ellos, sin consentimiento',
  segments: 'segmentos',
  rejected: 'rechazados por el servicio',
  failed: 'fallidos',
  inDoubt: 'en duda',
  cancelled: 'cancelados (nunca enviados)',
  rate: '{rate}/s',
  eta: 'faltan unos {eta}',
  'since.scheduled': 'empieza {at}',
  'detail.SERVICE_UNREACHABLE': 'el servicio no responde desde {since}; reintentando',
  'file.back': '← Campañas',
  'file.funnel': 'Embudo',
  'file.deliveries': 'Reportes de entrega en el tiempo',
  'file.noDeliveries': 'Aún no hay reportes de entrega.',
  'file.totals':
    'Reportes recibidos: {delivered} entregados, {undelivered} no entregados, {unknown} desconocidos',
  'file.errors': 'Errores por código',
  'file.noErrors': 'No hay líneas inválidas.',
  'file.chunks': 'Lotes',
  'file.timeline': 'Línea de tiempo',
  'file.downloads': 'Descargas',
  'file.pruned': 'Sus destinatarios se borraron por retención el {at}; sus conteos se conservan.',
  'file.worker': 'Trabajador {worker}',
  'file.notFound': 'No existe el archivo {fileId}.',
  'file.replies': 'Respuestas',
  'replies.rate':
    'Tasa de respuesta: {rate} ({replied} de {submitted} destinatarios respondieron; {replies} respuestas).',
  'replies.none': 'Aún no hay respuestas.',
  'replies.latest': 'Las últimas {n}, de la más reciente a la más antigua:',
  'col.from': 'De',
  'col.reply': 'Respuesta',
  'col.received': 'Recibida',
  'col.optOut': 'Baja',
  'col.code': 'Código',
  'col.count': 'Cantidad',
  'col.hint': 'Qué hacer',
  'col.lines': 'Primeras líneas',
  'col.line': 'Línea',
  'col.message': 'Mensaje',
  'col.value': 'Valor',
  'col.country': 'País',
  'col.segments': 'Segmentos',
  'file.cost': 'Costo en segmentos',
  'file.noCost': 'Se conoce cuando se lee el archivo.',
  'cost.gsm7': 'Enviado transliterado a GSM-7: {gsm7} segmentos en vez de {written} tal como se escribió.',
  'cost.never':
    'Tal como se escribió: {written} segmentos; transliterado a GSM-7 (transliterate: "gsm7") costaría {gsm7}.',
  'col.when': 'Cuándo',
  'col.reason': 'Motivo',
  'chunk.pending': 'por enviar',
  'chunk.accepted': 'aceptados',
  'chunk.rejected': 'rechazados',
  'chunk.failed': 'fallidos',
  'chunk.inDoubt': 'en duda',
  'chunk.cancelled': 'cancelados (nunca enviados)',
  'chunk.total': 'total',
  'action.pause': 'Pausar',
  'action.resume': 'Reanudar',
  'action.cancel': 'Cancelar',
  'action.retry': 'Reintentar',
  'confirm.pause': '¿Pausar «{name}»? El envío se detiene después del lote en curso.',
  'confirm.resume': '¿Reanudar «{name}»?',
  'confirm.cancel':
    '¿Cancelar «{name}»? Los destinatarios aún no enviados no se enviarán nunca. No se puede deshacer.',
  'confirm.retry':
    '¿Reenviar los lotes fallidos y en duda de «{name}»? Los destinatarios en duda podrían recibir el mensaje dos veces.',
  'confirm.yes': 'Sí',
  'confirm.no': 'No',
  'action.done': 'Listo: el archivo está {state}.',
  'check.title': 'Revisar un archivo antes de dejarlo',
  'check.text':
    'El archivo se revisa aquí con las reglas del origen elegido, como dropline validate --source. No se guarda nada, no se envía nada.',
  'check.source': 'Origen',
  'check.file': 'Archivo',
  'check.submit': 'Revisar',
  'check.busy': 'Revisando…',
  'check.accepted': 'Aceptado: se enviaría.',
  'check.rejected': 'Rechazado: {code}',
  'check.layout': 'Formato',
  'check.encoding': 'Codificación',
  'check.separator': 'Separador',
  'check.errors': 'Primeros errores',
  'check.warnings': 'Advertencias',
  'health.title': 'Estado del servicio de mensajería',
  'health.text': 'Los puntos de monitoreo del servicio, últimos 15 minutos, por cuenta.',
  'health.account': 'Cuenta {account}',
  'health.ok': 'respondió en {ms} ms',
  'health.failed': 'falló: {error}',
  'health.none': 'Aún sin respuesta.',
  'error.generic': 'Algo salió mal: {error}',
  updated: 'actualizado {at}',
  'state.waiting': 'en espera',
  'state.validating': 'validando',
  'state.rejected': 'rechazado',
  'state.duplicate': 'duplicado',
  'state.scheduled': 'programado',
  'state.sending': 'enviando',
  'state.paused': 'en pausa',
  'state.submitted': 'enviado al servicio',
  'state.completed': 'completado',
  'state.partial': 'parcial',
  'state.cancelled': 'cancelado',
  // Issue 33: códigos y sus parámetros (docs/dashboard.md "Codes and languages").
  'reason.PAUSED_BY_DASHBOARD': 'pausado desde el panel',
  'reason.PAUSED_BY_USER': 'pausado por un usuario',
  'reason.RESUMED_BY_DASHBOARD': 'reanudado desde el panel',
  'reason.RESUMED_BY_USER': 'reanudado por un usuario',
  'reason.CANCELLED_BY_DASHBOARD': 'cancelado desde el panel',
  'reason.CANCELLED_BY_USER': 'cancelado por un usuario',
  'reason.SCHEDULED_WINDOW': 'fuera del horario de envío: empieza {at} ({zone})',
  'reason.SCHEDULED_SEND_AT': 'programado por el archivo (sendAt): empieza {at} ({zone})',
  'reason.WINDOW_NEVER_OPENS': 'el horario de envío no abre en los próximos 400 días: revise sendWindow',
  'reason.PARTIAL': '{failed} lote(s) fallaron y {inDoubt} quedaron en duda: el botón Reintentar los reenvía',
  'reason.ACCOUNT_REFUSED': 'el servicio de mensajería rechazó la cuenta: {text}',
  'reason.TEXT': '{text}',
  'rejection.line': 'línea {line}: {message}',
  'rejection.TOO_MANY_INVALID':
    '{invalid} de {judged} destinatarios son inválidos ({percent} %; el límite es {limit} %)',
  'rejection.DUPLICATE_FILE': 'el mismo contenido ya se envió desde este origen como {name} ({state})',
  'rejection.FILE_TOO_LARGE': 'el archivo pesa más de {max} bytes (maxFileBytes): {bytes} bytes o más',
  'error.FILE_STATE': 'el archivo está {state}; {action} aplica a un archivo {from}',
  'error.NOTHING_TO_RETRY': 'no hay lotes fallidos ni en duda para reenviar',
  'error.BUSY': 'un trabajador está enviando este archivo en este momento; intente de nuevo en un rato',
  or: ' o ',
  'chart.time': 'Hora',
  'layout.personalized': 'personalizado',
  'layout.bulk': 'masivo',
  'list.arrived': 'llegó {at}',
  'list.finished': 'terminó {at}',
  'summary.sending': 'Archivos enviando',
  'summary.sentToday': 'Enviados hoy',
  'summary.rate': 'Tasa de entrega hoy',
  'summary.waiting': 'Informes de entrega pendientes',
  'summary.service': 'Servicio de mensajería',
  'summary.serviceOk': 'responde',
  'summary.serviceDown': 'no responde desde {since}',
  'summary.serviceUnknown': 'aún sin consultar',
  'summary.review': 'Respuestas por revisar',
  'review.title': 'Respuestas por revisar',
  'review.text':
    'Respuestas que parecen pedir que no se escriba más pero no son una palabra clave (“no me escriban más”, “stop please”). No se aplicó nada: a esos números se les sigue enviando hasta que alguien decida (dropline optouts <número> --opt-out).',
  'review.none': 'Ninguna respuesta por revisar.',
  'review.received': 'Recibida',
  'review.from': 'De',
  'review.to': 'A (código corto)',
  'review.reply': 'Respuesta',
  'http.413': 'El panel revisa archivos de hasta 64 MB; para uno más grande use dropline validate --source.',
  'http.408':
    'El archivo no terminó de llegar a tiempo; revíselo de nuevo, o use dropline validate --source.',
  'http.429': 'Ya se están revisando dos archivos; intente de nuevo en un momento.',
};

export const LANGUAGES = { en, es };

/** The codes of src/errors.ts: Spanish here (codes.js), English from the server (/api/meta `texts`). */
const CODES = { en: {}, es: codesEs };

/** The English of every code, as the server has it (app.js, once /api/meta answered). */
export function setEnglishCodes(texts) {
  CODES.en = texts ?? {};
}

/** What a code means (`message`) or what to do about it (`hint`), in the page's language. */
export function codeText(code, part) {
  return CODES[current][code]?.[part] ?? CODES.en[code]?.[part] ?? code;
}

/** The saved choice, else the browser's language (Spanish for any es-*), else English. */
export function pickLanguage() {
  const saved = localStorage.getItem('dropline.lang');
  if (saved === 'es' || saved === 'en') return saved;
  return (navigator.language || 'en').toLowerCase().startsWith('es') ? 'es' : 'en';
}

let current = 'en';

export function setLanguage(lang) {
  current = lang === 'es' ? 'es' : 'en';
  localStorage.setItem('dropline.lang', current);
  document.documentElement.lang = current;
}

export function language() {
  return current;
}

/** The text of `key` with `{name}` placeholders filled from `vars`. */
export function t(key, vars = {}) {
  const text = LANGUAGES[current][key] ?? en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

export function num(n) {
  return new Intl.NumberFormat(current === 'es' ? 'es-CO' : 'en-US').format(n);
}

/**
 * A date and time in the page's language, the year in four digits: `24/12/30` reads as
 * day/month/year or year/month/day (docs/dashboard.md "Pages"). `day: false`: the time
 * alone; `zone`: in that time zone, else the reader's.
 */
export function dateTime(date, { seconds = false, day = true, zone } = {}) {
  return new Intl.DateTimeFormat(current === 'es' ? 'es-CO' : 'en-US', {
    ...(day ? { year: 'numeric', month: 'numeric', day: 'numeric' } : {}),
    hour: 'numeric',
    minute: '2-digit',
    ...(seconds ? { second: '2-digit' } : {}),
    ...(zone ? { timeZone: zone } : {}),
  }).format(date);
}

export function when(iso) {
  if (!iso) return '';
  return dateTime(new Date(iso), { seconds: true });
}

/** A duration in seconds as "1 h 5 min", "3 min", "40 s". */
export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** A time in the given zone (a schedule is the source's time, not the reader's: the text names the zone). */
export function whenIn(iso, zone) {
  if (!iso) return '';
  return dateTime(new Date(iso), { zone });
}

/** Whether `key` has a text (in English, which has them all). */
export function has(key) {
  return key in en;
}
