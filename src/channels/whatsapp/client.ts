// The WhatsApp host's client (docs/channels.md "WhatsApp"): POST
// /MultiChannelInput/SendMessageMetaWhatsApp with the account's Basic credentials, one template
// message to one recipient a request (the transport: src/service/recipient-client.ts). What the
// service answered for each message, in order; the pipeline records it.
//
// - 200 (any 2xx): received, not delivered: accepted, with the transaction number
//   when the body carries one (its shape is not shown: transactionNumber and its spellings).
// - 400: this message refused (a template not approved, wrong parameter count, a number not
//   the account's): rejected with the service's message. Final.
// - 401 (credentials) and 403 (no permission, an address not allowed): this message and the
//   ones not yet sent are not sent (the file pauses until the account is fixed).
// - 5xx, 429 and requests that never left are sent again with back-off; a request written
//   without an answer is in doubt, never sent again here.
import type { RecipientOutcome } from '../../service/channel-account.ts';
import { RecipientClient, type RecipientClientOptions } from '../../service/recipient-client.ts';
import { transactionNumberOf } from '../../service/wire.ts';

export const WHATSAPP_PATH = '/MultiChannelInput/SendMessageMetaWhatsApp';

/** One message: an approved template with its parameters in the template's order. */
export interface WhatsAppMessage {
  /** The sending number. */
  readonly source: string;
  readonly destination: string;
  readonly templateId: string;
  readonly parameters: readonly string[];
}

/** The same outcomes as an email recipient's: accepted, rejected, failed, in doubt, refused. */
export type WhatsAppOutcome = RecipientOutcome;

/** `baseUrl`: `{whatsapp_url}`. */
export type WhatsAppClientOptions = RecipientClientOptions;

export class WhatsAppClient extends RecipientClient<WhatsAppMessage> {
  constructor(opts: WhatsAppClientOptions) {
    super(opts, 'the WhatsApp baseUrl', {
      path: WHATSAPP_PATH,
      body: (message) =>
        Buffer.from(
          JSON.stringify({
            source: message.source,
            destination: message.destination,
            templateId: message.templateId,
            parameters: message.parameters,
          }),
        ),
      // Received: the transaction number, when the body (not shown by the spec) carries one.
      accepted: (parsed) => ({ kind: 'accepted', messageId: transactionNumberOf(parsed) }),
    });
  }
}
