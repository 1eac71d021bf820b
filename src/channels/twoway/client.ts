// The two-way SMS client (docs/channels.md "Two-way SMS"): POST /momessage on the SMS host, one
// message to one recipient a request, with the account's Bearer token (the SMS accounts' token,
// shared through the store: docs/service.md "Tokens"; the transport:
// src/service/recipient-client.ts). What the service answered for each message, in order; the
// pipeline records it.
//
// - 200 with `Message: OK`: taken, final (ACCEPTED), the answer's `Id` its transaction number.
// - 200 with `Message: ERROR`: this message refused, with the service's `Status`. Final.
// - A 200 with neither: unclear, in doubt (it may have been sent).
// - 401: the token is renewed and the message sent again (a 401 was not processed); still
//   refused after MAX_REAUTHS renewals, or a login refused: the account is (the file pauses).
//   403: the account may not (the file pauses). The messages not yet sent are not sent.
// - 5xx, 429 and requests that never left are sent again with back-off; a request written
//   without an answer, or answered by a gateway's 502/504, is in doubt, never sent again here.
import type { RecipientOutcome } from '../../service/channel-account.ts';
import type { TokenOptions } from '../../service/client-options.ts';
import { RecipientClient, type RecipientClientOptions } from '../../service/recipient-client.ts';
import type { TokenShare } from '../../service/token.ts';
import { reasonOf } from '../../service/wire.ts';

export const MOMESSAGE_PATH = '/momessage';

/** One two-way message: its text to one number, from a short code. */
export interface TwoWayMessage {
  readonly text: string;
  /** The recipient, digits with the country code (as the reader normalised it). */
  readonly phoneNumber: string;
  readonly shortCode: string;
}

/** `baseUrl`: `{base_url}`, the SMS host. */
export interface TwoWayClientOptions extends RecipientClientOptions {
  readonly token?: Partial<TokenOptions> | undefined;
  /** The account's token kept in the store, shared with every worker and SMS account on it. */
  readonly tokenShare?: TokenShare | undefined;
  readonly now?: (() => number) | undefined;
}

export class TwoWayClient extends RecipientClient<TwoWayMessage> {
  constructor(opts: TwoWayClientOptions) {
    super(
      opts,
      'the twoway baseUrl',
      {
        path: MOMESSAGE_PATH,
        // Fixed key order: a message sent again is the same bytes.
        body: (message) =>
          Buffer.from(
            JSON.stringify({
              MessageText: message.text,
              PhoneNumber: message.phoneNumber,
              ShortCode: message.shortCode,
            }),
          ),
        accepted: moMessageAnswer,
      },
      { token: opts.token, share: opts.tokenShare, now: opts.now },
    );
  }
}

/**
 * POST /momessage's 2xx answer (docs/channels.md "Two-way SMS"): `Message` OK is the message
 * taken, its `Id` the transaction number; ERROR refuses it, with the service's `Status`.
 * Anything else may be either: in doubt, never sent again.
 */
export function moMessageAnswer(body: unknown, status: number, secrets: readonly string[]): RecipientOutcome {
  const o = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const message = typeof o.Message === 'string' ? o.Message.trim().toUpperCase() : null;
  if (message === 'OK') {
    const id = o.Id;
    const messageId =
      typeof id === 'string' && id !== ''
        ? id
        : typeof id === 'number' && Number.isSafeInteger(id)
          ? String(id)
          : null;
    return { kind: 'accepted', messageId };
  }
  if (message === 'ERROR') {
    const code = typeof o.Status === 'string' || typeof o.Status === 'number' ? String(o.Status) : 'none';
    return {
      kind: 'rejected',
      code: 'DROPLINE_ERR_SERVICE_REJECTED',
      reason: reasonOf(`Message ERROR, Status ${code}`.slice(0, 200), status, secrets),
    };
  }
  return { kind: 'in_doubt', reason: `HTTP ${status} without Message OK or ERROR: it may have been sent` };
}
