// The dashboard's texts (the plain ES modules the page loads: src/ops/dashboard/i18n.js and
// codes.js), typed for the tests that check them.
const dir = new URL('../../src/ops/dashboard/', import.meta.url);
const i18n = (await import(new URL('i18n.js', dir).href)) as {
  LANGUAGES: Record<'en' | 'es', Record<string, string>>;
};
const codes = (await import(new URL('codes.js', dir).href)) as {
  es: Record<string, { message: string; hint: string }>;
};

/** i18n.js: every text of the page, by key, in English and Spanish. */
export const TEXTS = i18n.LANGUAGES;
/** codes.js: the Spanish of each code of src/errors.ts. */
export const CODES_ES = codes.es;
