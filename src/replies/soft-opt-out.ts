// Replies that look like a request to stop without being a keyword ("no me escriban más",
// "stop please"): flagged for a person to review, never applied (docs/opt-outs.md "Flagged for
// review"). A word list, not a language model: its limits are written there.
import { normaliseReply } from './keywords.ts';

/**
 * Phrases of a request to stop, on the reply in its normal form (upper case, no accents) with
 * every run of non-letters one space: `don't` reads `DON T`, `más` reads `MAS`.
 */
const STOP_PHRASES: readonly RegExp[] = [
  // "no me escriban", "no me envíen más", "no me llamen", "no molesten"
  /\bNO (ME |NOS )?(ESCRIB|ENVI|MAND|LLAM|CONTACT|MOLEST|FASTIDI)[A-Z]*\b/,
  // "ya no quiero mensajes", "no quiero recibir más mensajes", "no deseo publicidad"
  /\b(NO|YA NO) (QUIERO|DESEO|NECESITO) (RECIBIR |SEGUIR RECIBIENDO )?(MAS )?(SUS |TUS |ESTOS |LOS )?(MENSAJES|MSJ|SMS|TEXTOS|CORREOS|PUBLICIDAD|PROMOCIONES|NOTIFICACIONES|NADA)\b/,
  /\bYA NO (QUIERO|DESEO)\b/,
  /\bNO MAS (MENSAJES|MSJ|SMS|PUBLICIDAD|PROMOCIONES)\b/,
  // "dejen de escribir", "deja de mandarme"
  /\bDEJ(A|E|EN|AR) DE (ESCRIBIR|ENVIAR|MANDAR|LLAMAR|MOLESTAR|CONTACTAR)/,
  // "quítenme de la lista", "borren mi número", "sáquenme de su base"
  /\b(QUITEN|QUITAR|SAQUEN|SACAR|BORREN|BORRAR|ELIMINEN|ELIMINAR|RETIREN|RETIRAR)(ME)?\b.*\b(LISTA|NUMERO|BASE|DATOS)\b/,
  /\b(QUITENME|SAQUENME|BORRENME|ELIMINENME|RETIRENME)\b/,
  /\bDAR(ME|SE)? DE BAJA\b/,
  /\b(DESUSCRIBIR|DESUSCRIBIRME|DESUSCRIBANME|DESUSCRIBEME|DESINSCRIBIRME)\b/,
  // English
  /\b(UNSUBSCRIBE|OPT ?OUT|REMOVE ME|TAKE ME OFF|LEAVE ME ALONE)\b/,
  /\b(DON ?T|DO NOT|STOP) (TEXT|MESSAG|CONTACT|EMAIL|CALL|WRIT|SEND)[A-Z]*\b/,
  /\bNO MORE (TEXTS|MESSAGES|SMS)\b/,
];

/** Opt-out keywords this short (after normalisation) are too common to flag inside a sentence. */
const MIN_CONTAINED_KEYWORD = 3;

function words(text: string): string {
  return normaliseReply(text)
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * True when `text` reads like a request to stop: one of the phrases above, or an opt-out
 * keyword of three letters or more as a word among others ("quiero salir", "STOP please",
 * "SALIR YA"). `NO` alone inside a sentence ("no gracias") is not. A reply that is exactly a
 * keyword is the keyword's business, not this one's (the caller asks matchKeyword first).
 */
export function looksLikeOptOut(text: string, optOutKeywords: readonly string[]): boolean {
  const w = words(text);
  if (w === '') return false;
  for (const p of STOP_PHRASES) if (p.test(w)) return true;
  const padded = ` ${w} `;
  for (const k of optOutKeywords) {
    const kw = words(k);
    if (kw.length >= MIN_CONTAINED_KEYWORD && padded.includes(` ${kw} `)) return true;
  }
  return false;
}
