import { type Command, InvalidArgumentError, Option } from 'commander';
import { fmt } from '../../channels/describe.ts';
import { channelOf } from '../../channels/index.ts';
import type { AccountConfig, Config } from '../../config/schema.ts';
import { DroplineError } from '../../errors.ts';
import { DEFAULTS, MAX_LINE_LENGTH, type ReadSummary } from '../../format/reader.ts';
import { sourceValidateOptions, toJson, type ValidateOptions, validateFile } from '../../format/validate.ts';
import type { SetExit } from './options.ts';
import { jsonHelp } from './options.ts';

const SHOWN = 20;
const sepName = (sep: string | null) => (sep === null ? 'none' : sep === '\t' ? 'TAB' : `'${sep}'`);

/**
 * `templateCheck`: what the email account said of the file's templateId: 'found', 'missing'
 * (the summary is then rejected UNKNOWN_TEMPLATE), or why it could not be asked; null: not
 * asked (no configured email account).
 */
export function toText(file: string, s: ReadSummary, templateCheck: string | null = null): string {
  const out: string[] = [];
  out.push(`${file}: ${s.accepted ? 'ACCEPTED' : 'REJECTED'}`);
  if (s.rejection) {
    out.push(`  ${s.rejection.code}: ${s.rejection.message}`);
    out.push(`  hint: ${s.rejection.hint}`);
  }
  if (s.layout) {
    const header = s.header ? `header ${s.columns?.join(', ')}` : 'no header';
    out.push(`  layout ${s.layout}, separator ${sepName(s.separator)}, ${header}`);
  }
  out.push(
    `  ${fmt(s.bytes)} bytes, encoding ${s.encoding ?? 'unknown'}${s.sha256 ? `, sha256 ${s.sha256}` : ''}`,
  );
  if (s.message !== null)
    out.push(
      `  message: ${JSON.stringify(s.message.length > 70 ? `${s.message.slice(0, 70)}…` : s.message)}`,
    );
  out.push(
    `  records ${fmt(s.records)}: ${fmt(s.valid)} valid, ${fmt(s.invalid)} invalid, ${fmt(s.duplicates)} duplicate, ${fmt(s.suppressed)} suppressed${s.noConsent > 0 ? ` (${fmt(s.noConsent)} NO_CONSENT: no consent for the channel)` : ''}`,
  );
  out.push(...channelOf(s.channel).describe(s, templateCheck));
  if (s.directives.priority) out.push(`  priority ${s.directives.priority} (#! priority:)`);
  if (s.directives.flash) out.push(`  flash ${s.directives.flash.flash} (#! flash:)`);
  if (s.directives.sendAt)
    out.push(`  not sent before ${s.directives.sendAt.at}, nor outside the send window (#! sendAt:)`);
  if (s.trailer)
    out.push(
      `  trailer on line ${s.trailer.line}${s.trailer.count === null ? '' : `: ${s.trailer.count} records`}`,
    );
  for (const [title, list, counts] of [
    ['errors', s.errors, s.errorCounts],
    ['warnings', s.warnings, s.warningCounts],
  ] as const) {
    const total = Object.values(counts).reduce((a, b) => a + (b ?? 0), 0);
    if (total === 0) continue;
    const byCode = Object.entries(counts)
      .map(([c, n]) => `${c} ${fmt(n ?? 0)}`)
      .join(', ');
    out.push(`  ${title}: ${fmt(total)} (${byCode})${total > SHOWN ? `, first ${SHOWN}:` : ':'}`);
    const hints = new Map<string, string>();
    for (const e of list.slice(0, SHOWN)) {
      const value = 'value' in e && e.value !== undefined ? ` [${e.value}]` : '';
      out.push(`    line ${e.line}: ${e.code} ${e.message}${value}`);
      hints.set(e.code, e.hint);
    }
    for (const [code, hint] of hints) out.push(`    hint (${code}): ${hint}`);
  }
  return `${out.join('\n')}\n`;
}

function ratio(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1)
    throw new InvalidArgumentError('a number from 0 to 1 is allowed');
  return n;
}

function lineLength(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_LINE_LENGTH)
    throw new InvalidArgumentError(`a positive integer up to ${MAX_LINE_LENGTH} (1 MiB) is allowed`);
  return n;
}

function countries(value: string): string[] {
  return value
    .split(',')
    .map((c) => c.trim().toUpperCase())
    .filter((c) => c.length > 0);
}

/**
 * The settings of the source the daemon would read the file from, so that validate answers
 * what the daemon will do; a flag given on the command line wins. The configuration is the
 * one `dropline run` reads (--config, DROPLINE_CONFIG or ./dropline.config.json), else the
 * embedded default (docs/configuration.md "The embedded default"): its one SMS source, as
 * `npm start` runs it, so that an email or WhatsApp file is refused here as it is there.
 */
async function withSourceSettings(
  flags: ValidateOptions,
  cmd: Command,
): Promise<{
  opts: ValidateOptions;
  from: string | null;
  account: AccountConfig | null;
  config: Config;
}> {
  const explicit = (cmd.optsWithGlobals() as { config?: string }).config;
  const { readConfigFile } = await import('../../config/load.ts');
  // SFTP host keys pinned as the daemon pins them: an opt-out list may be read on such a source.
  const { config, path } = readConfigFile({ path: explicit, pinHostKeys: true });
  const source =
    flags.source === undefined ? config.sources[0] : config.sources.find((s) => s.name === flags.source);
  if (!source) {
    throw new DroplineError(
      'DROPLINE_ERR_USAGE',
      `--source ${flags.source}: no such source (configured: ${config.sources.map((s) => s.name).join(', ')})`,
    );
  }
  const given = (key: keyof ValidateOptions) => {
    const from = cmd.getOptionValueSource(key);
    return from !== undefined && from !== 'default';
  };
  const fromSource = sourceValidateOptions(config, source);
  const opts: ValidateOptions = {
    ...flags,
    maxInvalidRatio: given('maxInvalidRatio') ? flags.maxInvalidRatio : fromSource.maxInvalidRatio,
    defaultCountry: given('defaultCountry') ? flags.defaultCountry : fromSource.defaultCountry,
  };
  const layout = given('layout') ? flags.layout : fromSource.layout;
  const allowed = given('allowedCountries') ? flags.allowedCountries : fromSource.allowedCountries;
  if (fromSource.maxFileBytes !== undefined) opts.maxFileBytes = fromSource.maxFileBytes;
  if (fromSource.allowDirectives !== undefined) opts.allowDirectives = fromSource.allowDirectives;
  // The channel and what its files send are the source's (a file's directives still win).
  for (const key of ['channel', 'email', 'whatsapp'] as const) {
    if (fromSource[key] === undefined) delete opts[key];
    else Object.assign(opts, { [key]: fromSource[key] });
  }
  if (!given('transliterate')) opts.transliterate = fromSource.transliterate ?? 'never';
  if (layout) opts.layout = layout;
  else delete opts.layout;
  if (allowed) opts.allowedCountries = allowed;
  else delete opts.allowedCountries;
  // --suppression-list replaces the configured lists (its <sourceName>: names a configured
  // source); else the global list and this source's own, as the daemon reads them.
  if (!given('suppressionList')) delete opts.suppressionList;
  opts.suppressionConfig = config;
  opts.source = source.name;
  return {
    opts,
    from: `settings of source ${source.name} (${path ?? 'embedded default'})`,
    account: config.accounts[source.account] ?? null,
    config,
  };
}

export function registerValidate(program: Command, setExit: SetExit): void {
  program
    .command('validate')
    .description('check a drop file against the format (docs/format.md): nothing is sent, nothing stored')
    .argument('<file>', 'the .txt drop file')
    .option('--json', jsonHelp('the result (counts, errors, warnings)'))
    .addOption(new Option('--layout <layout>', 'force the layout').choices(['personalized', 'bulk']))
    .option(
      '--max-invalid-ratio <ratio>',
      'reject above this share of invalid recipients',
      ratio,
      DEFAULTS.maxInvalidRatio,
    )
    .option('--default-country <iso>', 'country of national numbers (ISO 3166 alpha-2)', 'CO')
    .option(
      '--allowed-countries <list>',
      'comma-separated ISO codes; others are COUNTRY_NOT_ALLOWED',
      countries,
    )
    .option(
      '--suppression-list <path>',
      'opted-out numbers, one per line: a file, s3://bucket/key or <sourceName>:<path> (instead of the configured lists)',
    )
    .option(
      '--consent-list <path>',
      'who agreed to which channels, `<number or address>;<channels>` lines: a file, s3://bucket/key or <sourceName>:<path> (instead of consent.list)',
    )
    .option(
      '--max-line-length <chars>',
      `longest physical line, in characters (at most ${MAX_LINE_LENGTH}, 1 MiB)`,
      lineLength,
      DEFAULTS.maxLineLength,
    )
    .addOption(
      new Option(
        '--transliterate <mode>',
        "gsm7: replace characters outside GSM-7 that have a look-alike (á→a); default: the source's setting, else never",
      ).choices(['never', 'gsm7']),
    )
    .option(
      '--source <name>',
      'with a configuration: the source whose settings apply (default: the first); flags given here override them',
    )
    .action(async (file: string, flags: ValidateOptions & { consentList?: string }, cmd: Command) => {
      const { opts, from, account, config } = await withSourceSettings(flags, cmd);
      let summary: ReadSummary;
      try {
        // As the daemon reads it (docs/opt-outs.md "Consent lists"): the source's channel's
        // consent, read once; unreadable is exit 2 like an opt-out list.
        // --consent-list replaces the configured list (its <sourceName>: names a configured source).
        const list = flags.consentList ?? config.consent?.list;
        if (list) {
          const { readConsentOnce } = await import('../../pipeline/consent-list.ts');
          const consented = { ...config, consent: { list } };
          opts.consent = await readConsentOnce({ config: consented, channel: opts.channel ?? 'sms' });
        }
        summary = await validateFile(file, opts);
      } catch (err) {
        // The issue's contract for validate: an unreadable file (or list) exits 2, like usage.
        if (
          err instanceof DroplineError &&
          (err.code === 'DROPLINE_ERR_FILE_UNREADABLE' ||
            err.code === 'DROPLINE_ERR_SUPPRESSION_LIST' ||
            err.code === 'DROPLINE_ERR_CONSENT_LIST')
        ) {
          process.stderr.write(`dropline: ${err.code}: ${err.message}\n  hint: ${err.hint}\n`);
          setExit(2);
          return;
        }
        throw err;
      }
      // As the daemon does: what the source's account says of the file (an email file's
      // templateId against its stored templates).
      const check = account && channelOf(account.channel).checkWithAccount;
      const templateCheck =
        check && summary.accepted && summary.email?.templateId ? await check(summary, account) : null;
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ ...toJson(file, summary), templateCheck }, null, 2)}\n`
          : `${from ? `${from}\n` : ''}${toText(file, summary, templateCheck)}`,
      );
      setExit(summary.accepted ? 0 : 1);
    });
}
