import diagnosticsChannel from 'node:diagnostics_channel';

/** Stops one subscription (createMetrics's close ends them all). */
export type Unsubscribe = () => void;

/** Subscribes to a diagnostics channel, returning how to unsubscribe the same function. */
export function listen(channel: string, onMessage: (message: unknown) => void): Unsubscribe {
  diagnosticsChannel.subscribe(channel, onMessage);
  return () => diagnosticsChannel.unsubscribe(channel, onMessage);
}
