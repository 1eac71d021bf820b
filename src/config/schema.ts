// dropline.config.json (docs/configuration.md): parsed once into a frozen Config.
// Unknown keys are errors: a typo must not silently fall back to a default.

import { z } from 'zod';
import { CHANNEL_SETTINGS, CHANNELS } from '../channels/names.ts';
import { DIRECTIVE_NAMES, PRIORITIES } from '../format/directives.ts';
import { DAYS, windowProblem } from '../plan/send-window.ts';
import { DEFAULT_KEYWORDS, overlappingKeywords } from '../replies/keywords.ts';
import { isLoopbackListen, parseListenAddress } from './listen.ts';

const duration = z.number().int().nonnegative();
export const ALERT_EVENTS = [
  'rejected',
  'paused',
  'partial',
  'completed',
  'source-down',
  'suppression-list-refused',
  'service-down',
] as const;

const listenAddress = z.string().superRefine((value, ctx) => {
  const parsed = parseListenAddress(value);
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
});

/**
 * When files may be sent (docs/campaign-rules.md): "colombia-commercial" (Ley 2300 de 2023)
 * or weekly rules in a time zone. null: any hour.
 */
const sendWindow = z.union([
  z.literal('colombia-commercial'),
  z
    .object({
      timezone: z.string().min(1),
      rules: z
        .array(
          z
            .object({
              days: z.array(z.enum(DAYS)).min(1),
              from: z.string(),
              to: z.string(),
            })
            .strict(),
        )
        .min(1),
      closed: z.array(z.string()).default([]),
      holidays: z.enum(['CO']).nullable().default(null),
    })
    .strict()
    .superRefine((spec, ctx) => {
      const problem = windowProblem(spec);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
]);
export type SendWindowConfig = z.output<typeof sendWindow>;

/** An email source's content (docs/format.md "Email files"): a file's directives override it. */
const emailContent = z
  .object({
    templateId: z.string().min(1).optional(),
    subject: z.string().min(1).max(998).optional(),
    html: z.string().min(1).optional(),
    /** The HTML body from a file, read at start-up. */
    htmlFile: z.string().min(1).optional(),
  })
  .strict();

/**
 * A WhatsApp source's template (docs/configuration.md "`accounts`: several sending accounts"): a
 * file's `#! templateId:` and `#! source:` override it.
 */
const whatsappContent = z
  .object({
    templateId: z.string().min(1).optional(),
    /** The sending number, when not the account's. */
    source: z
      .string()
      .regex(/^\+?\d{8,15}$/, '8 to 15 digits')
      .transform((v) => v.replace(/^\+/, ''))
      .optional(),
  })
  .strict();

/** A short code of the SMS host (docs/channels.md "Two-way SMS"): where replies to its messages return. */
const shortCode = z.string().regex(/^\d{3,10}$/, '3 to 10 digits');

const sourceCommon = {
  name: z
    .string()
    .min(1)
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ - only'),
  layout: z.enum(['personalized', 'bulk']).nullable().default(null),
  readiness: z.enum(['stable', 'marker', 'trailer']).default('stable'),
  stableMs: duration.optional(),
  pollMs: duration.optional(),
  /** How long a file may wait for its marker or trailer before it is MISSING_TRAILER. */
  incompleteTimeoutMs: duration.default(60 * 60_000),
  maxInvalidRatio: z.number().min(0).max(1).default(0.2),
  maxFileBytes: z
    .number()
    .int()
    .positive()
    .default(2 * 1024 ** 3),
  allowedCountries: z.array(z.string().length(2)).nullable().default(null),
  defaultCountry: z.string().length(2).default('CO'),
  /** The account (a key of `accounts`, or "default": the `api` credentials) this source's files are sent with. */
  account: z.string().min(1).default('default'),
  /** Its files' share of the account when several send at once: high 4, normal 2, low 1 (docs/scaling.md). */
  priority: z.enum(PRIORITIES).default('normal'),
  /**
   * docs/format.md "Directives": the `#!` directives its files may use: all (true), none (false) or
   * these.
   */
  allowDirectives: z.union([z.boolean(), z.array(z.enum(DIRECTIVE_NAMES))]).default(true),
  /** This source's window instead of the global one (null: any hour); absent: the global one. */
  sendWindow: sendWindow.nullable().optional(),
  /** An opt-out list for this source's files, in addition to the global one. */
  suppressionList: z.string().min(1).nullable().default(null),
  /** gsm7: characters outside GSM-7 with a GSM-7 look-alike are replaced (á→a); never: the text is the sender's. */
  transliterate: z.enum(['never', 'gsm7']).default('never'),
  /**
   * What its files send (docs/format.md "Directives": `#! channel:` must agree), with an account of
   * that channel.
   */
  channel: z.enum(['sms', 'rcs', 'email', 'whatsapp', 'twoway']).default('sms'),
  /**
   * The short code its messages go out from (sms: the massive message's `shortCode`; twoway:
   * instead of the account's), so replies come back to it (docs/channels.md "Two-way SMS").
   */
  shortCode: shortCode.optional(),
  /** An email source's content, unless its files' directives give it. */
  email: emailContent.optional(),
  /** A WhatsApp source's template and sending number, unless its files' directives give them. */
  whatsapp: whatsappContent.optional(),
};

/**
 * A sending account of the messaging service, its own credentials, budget and pause state.
 * `sms` (POST /mtmessage/massive, the default), `rcs` (POST /mtmessage, Channel RCS: the SMS
 * host and credentials), `email` (POST /email/v1/deliver), `whatsapp` (POST
 * /MultiChannelInput/SendMessageMetaWhatsApp) and `twoway` (POST /momessage: the SMS host).
 */
/** A contact ledger's entity name (docs/campaign-rules.md "Contact limit"). */
const entityName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ - only');
const budgetKeys = {
  /**
   * Not a budget key, but every account's: the company whose contact ledger its sends count in
   * (contactLimit); default contactLimit.entity.
   */
  entity: entityName.optional(),
  /** Default: api.ratePerSecond (recipients a second). */
  ratePerSecond: z.number().nonnegative().optional(),
  /** Default: api.concurrency. */
  concurrency: z.number().int().min(1).max(256).optional(),
};
const smsAccount = z
  .object({
    /** rcs: the same host and credentials, sent with POST /mtmessage (`Channel: "RCS"`). */
    channel: z.enum(['sms', 'rcs']),
    baseUrl: z.string().url(),
    username: z.string().min(1),
    password: z.string().optional(),
    passwordFile: z.string().optional(),
    ...budgetKeys,
  })
  .strict();
const emailAccount = z
  .object({
    channel: z.literal('email'),
    /** `{email_url}`: the email host. */
    baseUrl: z.string().url(),
    apiKey: z.string().optional(),
    apiKeyFile: z.string().optional(),
    /** The sender, one of the account's verified domains (the service checks it). */
    from: z.string().min(3).max(254),
    fromName: z.string().min(1).max(200).optional(),
    ...budgetKeys,
  })
  .strict();
const whatsappAccount = z
  .object({
    channel: z.literal('whatsapp'),
    /** `{whatsapp_url}`: the WhatsApp host. */
    baseUrl: z.string().url(),
    /** WhatsApp takes Basic with the account's username and password. */
    username: z.string().min(1),
    password: z.string().optional(),
    passwordFile: z.string().optional(),
    /** The account's sending number (the WhatsApp request's `source`). */
    source: z
      .string()
      .regex(/^\+?\d{8,15}$/, '8 to 15 digits')
      .transform((v) => v.replace(/^\+/, '')),
    ...budgetKeys,
  })
  .strict();
/** Two-way SMS (POST /momessage): the SMS host, its credentials and token, and a short code. */
const twowayAccount = z
  .object({
    channel: z.literal('twoway'),
    baseUrl: z.string().url(),
    username: z.string().min(1),
    password: z.string().optional(),
    passwordFile: z.string().optional(),
    /** The short code assigned to the account (the request's `ShortCode`): replies return to it. */
    shortCode,
    ...budgetKeys,
  })
  .strict();
const account = z.preprocess(
  (v) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && !('channel' in v)
      ? { ...v, channel: 'sms' }
      : v,
  z.discriminatedUnion('channel', [smsAccount, emailAccount, whatsappAccount, twowayAccount]),
);
export type AccountConfig = z.output<typeof account>;
export type EmailAccountConfig = z.output<typeof emailAccount>;

const localSource = z
  .object({
    ...sourceCommon,
    type: z.literal('local'),
    path: z.string().min(1),
  })
  .strict();

const sftpSource = z
  .object({
    ...sourceCommon,
    type: z.literal('sftp'),
    host: z.string().min(1),
    port: z.number().int().positive().default(22),
    username: z.string().min(1),
    password: z.string().optional(),
    passwordFile: z.string().optional(),
    privateKeyPath: z.string().optional(),
    passphrase: z.string().optional(),
    passphraseFile: z.string().optional(),
    hostKeySha256: z.string().optional(),
    /** The server's public host key (`.pub` or a known_hosts line): pinned as its SHA256 fingerprint at load. */
    hostKeyFile: z.string().optional(),
    insecureSkipHostKeyCheck: z.boolean().default(false),
    path: z.string().min(1),
  })
  .strict();

const s3Source = z
  .object({
    ...sourceCommon,
    type: z.literal('s3'),
    bucket: z.string().min(1),
    prefix: z.string().default(''),
    region: z.string().default('us-east-1'),
    endpoint: z.string().url().optional(),
    forcePathStyle: z.boolean().default(false),
    /** SDK checksums: WHEN_REQUIRED works with every S3-compatible store (docs/sources.md). */
    checksums: z.enum(['WHEN_REQUIRED', 'WHEN_SUPPORTED']).default('WHEN_REQUIRED'),
  })
  .strict();

/** Bind as an SMPP receiver for users' replies (docs/opt-outs.md "Replies over SMPP"). */
const smppReceiver = z
  .object({
    host: z.string().min(1),
    port: z.number().int().positive().max(65_535).default(6900),
    tls: z.boolean().default(false),
    systemId: z.string().min(1),
    password: z.string().optional(),
    passwordFile: z.string().optional(),
  })
  .strict()
  .nullable();

const keywordList = z.array(z.string().min(1));
const keywordSets = z
  .object({ optOut: keywordList.optional(), optIn: keywordList.optional(), help: keywordList.optional() })
  .strict()
  .superRefine((sets, ctx) => {
    const twice = overlappingKeywords({
      optOut: sets.optOut ?? [],
      optIn: sets.optIn ?? [],
      help: sets.help ?? [],
    });
    if (twice.length > 0)
      ctx.addIssue({ code: 'custom', message: `in two keyword lists: ${twice.join(', ')}` });
  });
/** What a short code answers: a text, or null for no answer. */
const answerText = z.string().min(1).max(1000).nullable();
/** A short code's own settings: each key given replaces the global one for replies to it. */
const shortCodeReplies = z
  .object({
    keywords: keywordSets.optional(),
    helpText: answerText.optional(),
    confirmOptOut: answerText.optional(),
    confirmOptIn: answerText.optional(),
  })
  .strict();

/**
 * Users' replies (docs/replies.md, docs/opt-outs.md "Keywords"): where they come from, how long
 * one can be joined to the campaign that sent to its number, the keywords and answers, and a
 * short code's own (`byShortCode`), each key of which replaces the global one for that code.
 */
const replies = z
  .object({
    smpp: smppReceiver.default(null),
    /** A reply is joined to the latest row sent to its number from its short code this long ago at most. */
    windowHours: z.number().positive().default(72),
    /** Replies whose whole text is one of these (case and accents ignored); a list not given: the defaults. */
    keywords: keywordSets.prefault({}).transform((sets) => ({
      optOut: sets.optOut ?? DEFAULT_KEYWORDS.optOut,
      optIn: sets.optIn ?? DEFAULT_KEYWORDS.optIn,
      help: sets.help ?? DEFAULT_KEYWORDS.help,
    })),
    /** The answer to a help keyword (sent through POST /momessage); null: help is recorded, not answered. */
    helpText: answerText.default(null),
    /** Sent after an opt-out, at most one confirmation a number a day; null: none. */
    confirmOptOut: answerText.default(null),
    /** Sent after an opt-in (not to a number a configured list still holds). */
    confirmOptIn: answerText.default(null),
    byShortCode: z.record(shortCode, shortCodeReplies).default({}),
  })
  .strict();
export type RepliesConfig = z.output<typeof replies>;

export const configSchema = z
  .object({
    /** Accounts by name; "default" is the `api` credentials unless named here. */
    accounts: z.record(z.string(), account).default({}),
    api: z
      .object({
        baseUrl: z.union([z.literal('sandbox'), z.string().url()]).default('sandbox'),
        username: z.string().default('demo'),
        password: z.string().optional(),
        passwordFile: z.string().optional(),
        chunkSize: z.number().int().min(1).max(100_000).default(1000),
        concurrency: z.number().int().min(1).max(256).default(4),
        ratePerSecond: z.number().nonnegative().default(0),
        timeoutMs: duration.default(30_000),
        inDoubt: z.enum(['hold', 'resend']).default('hold'),
        inDoubtGraceMs: duration.default(10 * 60_000),
        retry: z
          .object({
            baseMs: duration.default(5000),
            maxMs: duration.default(5 * 60_000),
            maxAttempts: z.number().int().min(1).default(8),
          })
          .strict()
          .default({ baseMs: 5000, maxMs: 5 * 60_000, maxAttempts: 8 }),
        /**
         * Milliseconds per unit of the token's expires_in (not documented: docs/service.md
         * "Tokens").
         */
        tokenExpiresInUnitMs: z.number().positive().default(1000),
        tokenMaxLifetimeS: z.number().positive().default(14_400),
      })
      .strict()
      .prefault({}),
    notify: z
      .object({
        publicUrl: z.string().url().optional(),
        listen: listenAddress.default('127.0.0.1:8081'),
        token: z.string().min(1, 'must not be empty: anyone could post reports').optional(),
        tokenFile: z.string().optional(),
      })
      .strict()
      .prefault({}),
    store: z.string().default('sqlite:./.dropline/state.db'),
    /** A file holding the store URL (its password too): a secret's `…File` variant. */
    storeFile: z.string().optional(),
    ops: z
      .object({
        listen: listenAddress.default('127.0.0.1:8080'),
        /** Bearer token of the ops API (and of every path but /healthz, /readyz when set). */
        token: z.string().min(1, 'must not be empty').optional(),
        tokenFile: z.string().optional(),
        /** Time for a file check's upload (POST /api/validate) to arrive whole, else 408 (issue 32). */
        uploadTimeoutMs: z.number().int().min(100).default(60_000),
      })
      .strict()
      .superRefine((ops, ctx) => {
        // Off loopback the API would show every campaign to the network: never without a token.
        if (ops.token === undefined && ops.tokenFile === undefined && !isLoopbackListen(ops.listen))
          ctx.addIssue({
            code: 'custom',
            path: ['token'],
            message: `required when ops.listen ("${ops.listen}") is not a loopback address (or ops.tokenFile)`,
          });
      })
      .prefault({}),
    sendWindow: sendWindow.nullable().default(null),
    /**
     * The contact ledger (docs/campaign-rules.md "Contact limit"): a recipient is contacted at most
     * perDay times a local day, and by at most channelsPerWeek channels a week (Monday to
     * Sunday), by its entity (every account and channel of it), whatever the campaign.
     */
    contactLimit: z
      .object({
        perDay: z.number().int().min(1).max(1000),
        /** Absent or null: no weekly rule. */
        channelsPerWeek: z.number().int().min(1).max(100).nullable().default(null),
        /** The entity of every account that names none (`accounts.<name>.entity`). */
        entity: entityName.default('default'),
        timezone: z.string().default('America/Bogota'),
      })
      .strict()
      .superRefine((c, ctx) => {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: c.timezone });
        } catch {
          ctx.addIssue({
            code: 'custom',
            path: ['timezone'],
            message: `"${c.timezone}" is not an IANA time zone`,
          });
        }
      })
      .nullable()
      .default(null),
    /** A local path, s3://bucket/key, or <sourceName>:<path> on a configured source. */
    suppressionList: z.string().min(1).nullable().default(null),
    /** Who agreed to which channels (docs/opt-outs.md "Consent lists"): others are NO_CONSENT. */
    consent: z
      .object({
        /** A local path, s3://bucket/key, or <sourceName>:<path>, as suppressionList. */
        list: z.string().min(1),
      })
      .strict()
      .nullable()
      .default(null),
    /** Users' replies: the SMPP receiver, their keywords, joined to campaigns (docs/replies.md). */
    replies: replies.optional(),
    /** The older spelling of `replies` (`{ keywords, smpp }`), read as `replies` (docs/replies.md "Configuration"). */
    optOut: z
      .object({ keywords: z.array(z.string().min(1)).optional(), smpp: smppReceiver.optional() })
      .strict()
      .optional(),
    report: z
      .object({
        /** Adds the sent text to report.csv (texts may be personal: off by default). */
        includeText: z.boolean().default(false),
        /** A report write that failed is tried again after this, doubled each failure… */
        retryBaseMs: duration.min(1).default(5000),
        /** …up to this (docs/runbook.md "Report pending"). */
        retryMaxMs: duration.min(1).default(300_000),
      })
      .strict()
      .prefault({}),
    deliveryTimeoutMs: duration.default(72 * 3600_000),
    duplicateWindowMs: duration.default(7 * 24 * 3600_000),
    /**
     * Finished files older than this lose their recipients and delivery reports (their
     * manifest stays): `dropline prune`, and `dropline run` hourly. 0 keeps everything.
     */
    retentionDays: z.number().nonnegative().default(90),
    /** Webhooks told when a file is rejected, paused, partial or completed, or a source is down (docs/alerts.md). */
    alerts: z
      .array(
        z
          .object({
            url: z.string().url(),
            events: z.array(z.enum(ALERT_EVENTS)).min(1),
            /** HMAC-SHA256 key of the X-Dropline-Signature header (or secretFile). */
            secret: z.string().min(1).optional(),
            secretFile: z.string().optional(),
            format: z.enum(['json', 'slack']).default('json'),
            /** `source-down`: after this long without a listing of the source. */
            sourceDownAfterMs: duration.default(5 * 60_000),
          })
          .strict(),
      )
      .default([]),
    /** How long a worker holds a file before another may take it over (crash recovery). */
    leaseMs: duration.default(30_000),
    /** Work that makes no progress this long is stuck: /readyz says so, other files go on. */
    workStallMs: duration.min(1).default(10 * 60_000),
    workers: z
      .object({
        /** Files one worker drives at once; their chunks share each account fairly. */
        filesInFlight: z.number().int().min(1).max(1000).default(8),
      })
      .strict()
      .prefault({}),
    sources: z
      .array(z.discriminatedUnion('type', [localSource, sftpSource, s3Source]))
      .min(1)
      .prefault([{ name: 'local', type: 'local', path: './drop' }]),
  })
  .superRefine((config, ctx) => {
    for (const name of Object.keys(config.accounts))
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name))
        ctx.addIssue({
          code: 'custom',
          path: ['accounts', name],
          message: 'an account name is letters, digits, _ and - (at most 64)',
        });
    const names = ['default', ...Object.keys(config.accounts).filter((n) => n !== 'default')];
    for (const [i, s] of config.sources.entries()) {
      const account = config.accounts[s.account];
      if (s.account !== 'default' && account === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['sources', i, 'account'],
          message: `no account "${s.account}" (accounts: ${names.join(', ')})`,
        });
        continue;
      }
      // The account sends the source's channel ("default" without accounts.default: sms).
      const channel = account?.channel ?? 'sms';
      if (channel !== s.channel)
        ctx.addIssue({
          code: 'custom',
          path: ['sources', i, 'account'],
          message: `the source sends ${s.channel}, account "${s.account}" sends ${channel}`,
        });
      // A channel's own block of source settings (`email`, `whatsapp`) only on its sources.
      for (const name of CHANNELS) {
        const block = CHANNEL_SETTINGS[name].sourceSettings;
        if (block !== null && s[block] !== undefined && s.channel !== name)
          ctx.addIssue({
            code: 'custom',
            path: ['sources', i, block],
            message: `only for channel "${name}"`,
          });
      }
      if (s.shortCode !== undefined && !CHANNEL_SETTINGS[s.channel].shortCode)
        ctx.addIssue({
          code: 'custom',
          path: ['sources', i, 'shortCode'],
          message: `only for channels ${CHANNELS.filter((c) => CHANNEL_SETTINGS[c].shortCode).join(', ')}`,
        });
      if (s.email?.html !== undefined && s.email.htmlFile !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['sources', i, 'email'],
          message: 'give html or htmlFile, not both',
        });
    }
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.replies !== undefined && config.optOut !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['optOut'],
        message: 'give replies or its older spelling optOut, not both',
      });
  })
  .transform(({ optOut, replies: given, ...config }) => ({
    ...config,
    replies: given ?? repliesOf(optOut),
  }));

/** `optOut: { keywords, smpp }` read as `replies` (keywords: its opt-out keywords). */
function repliesOf(optOut: { keywords?: string[] | undefined; smpp?: unknown } | undefined): RepliesConfig {
  return replies.parse({
    ...(optOut?.smpp === undefined ? {} : { smpp: optOut.smpp }),
    ...(optOut?.keywords === undefined ? {} : { keywords: { optOut: optOut.keywords } }),
  });
}

export type RawConfig = z.input<typeof configSchema>;
export type Config = z.output<typeof configSchema>;
export type SourceConfig = Config['sources'][number];
export type LocalSourceConfig = z.output<typeof localSource>;
export type SftpSourceConfig = z.output<typeof sftpSource>;
