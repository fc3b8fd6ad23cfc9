/**
 * What a delivery can be and how the receiver can answer it: one list each, shared by the receiver
 * (which parses and answers), the metrics (whose label values must be a closed set) and the CLI
 * (which sends deliveries). A leaf: it imports nothing of the bot.
 */

/** The hook format's object kinds of that era (docs/server-behaviour.md#hook-delivery). */
export const KNOWN_KINDS = [
  'push',
  'tag_push',
  'issue',
  'note',
  'merge_request',
  'build',
  'pipeline',
  'wiki_page',
] as const;

/** How the receiver answered a delivery. */
export type DeliveryOutcome =
  | 'accepted'
  | 'duplicate'
  | 'ignored'
  | 'unauthorized'
  | 'bad_request'
  | 'too_large'
  /** 503: the inbox is full (by entries or by bytes); the delivery was not kept. */
  | 'inbox_full'
  /** 503: bodies being read at once reached their cap; this one was not read. */
  | 'overloaded'
  | 'error';
