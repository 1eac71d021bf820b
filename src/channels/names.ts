// The service's channels by name (docs/format.md "Format 1.1": `#! channel:`), with what the
// configuration knows of each before anything is opened: the secret its accounts take and its
// sources' own block of settings. The registry (index.ts) holds one definition for each name,
// which the compiler checks. Imports nothing: the configuration schema reads it.

/** The `#!` directives only some channels' files take. */
export type ChannelDirective = 'subject' | 'templateId' | 'source' | 'flash';

interface ChannelSettings {
  /** The secret its accounts are configured with (`password`/`passwordFile` or `apiKey`/`apiKeyFile`). */
  readonly secret: 'password' | 'apiKey';
  /** Its sources' own block of settings (`email`, `whatsapp`), which other sources may not have. */
  readonly sourceSettings: 'email' | 'whatsapp' | null;
  /** Its sources may set `shortCode`: the short code its messages go out from, where replies return. */
  readonly shortCode: boolean;
}

/** In the order `#! channel:`'s error lists them. */
export const CHANNEL_SETTINGS = {
  sms: { secret: 'password', sourceSettings: null, shortCode: true },
  rcs: { secret: 'password', sourceSettings: null, shortCode: false },
  whatsapp: { secret: 'password', sourceSettings: 'whatsapp', shortCode: false },
  email: { secret: 'apiKey', sourceSettings: 'email', shortCode: false },
  twoway: { secret: 'password', sourceSettings: null, shortCode: true },
} as const satisfies Record<string, ChannelSettings>;

export type ChannelName = keyof typeof CHANNEL_SETTINGS;
export const CHANNELS = Object.keys(CHANNEL_SETTINGS) as readonly ChannelName[];
