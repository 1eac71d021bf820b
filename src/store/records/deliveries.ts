// Delivery reports and the statuses they give recipients (docs/contract.md "Recipient outcomes
// and delivery status", docs/notify.md "Duplicates, ordering and orphans").

/** Delivery status of a recipient: `pending`, `UNKNOWN`, or the status name received. */
export const PENDING_DELIVERY = 'pending';

export const UNKNOWN_DELIVERY = 'UNKNOWN';

export const DELIVERED = 'DELIVERED_TO_HANDSET';

/**
 * The final status of a recipient the service accepted on a channel without delivery reports
 * (email, WhatsApp): written with the chunk's result (ChunkResult.finalStatus).
 */
export const ACCEPTED_DELIVERY = 'ACCEPTED';

/**
 * One status notification, the one element of its `results` (docs/service.md "Status
 * notifications"), as received.
 */
export interface DeliveryEvent {
  transactionNumber: string;
  to: string;
  messageId: string;
  bulkId: string;
  callbackData: string | null;
  smsCount: number | null;
  status: string;
  receivedAt: string;
}

export interface DeliveryResult {
  /** Events new to the store (not seen before with the same transactionNumber + to). */
  recorded: number;
  /** Events already recorded: changed nothing. */
  duplicates: number;
  /** New events whose bulkId + messageId match no recipient: kept, not applied. */
  orphans: number;
  /** Files whose recipients changed status (to check for completion). */
  fileIds: string[];
}

/**
 * Recipients of a file whose final delivery status was recorded in one minute of the store's
 * clock (Store.deliveryTimeline): the net change of that minute, so a status replaced later
 * (a late report after UNKNOWN, a second report) moves one count out of the category it left,
 * in the minute it changed, and a minute's count may be negative. The three categories are
 * disjoint; summed over every minute of a file, delivered = counts().delivered, unknown =
 * counts().unknown and undelivered + unknown = counts().undelivered (which holds UNKNOWN too).
 */
export interface DeliveryMinute {
  /** The minute's start (ISO-8601 UTC: 2026-03-01T12:34:00.000Z). */
  minute: string;
  /** DELIVERED_TO_HANDSET. */
  delivered: number;
  /** Any other final status, UNKNOWN and ACCEPTED excepted. */
  undelivered: number;
  /** UNKNOWN: no report before the delivery deadline (expireDeliveries). */
  unknown: number;
  /** ACCEPTED: taken by the service on a channel without delivery reports. */
  accepted: number;
}
