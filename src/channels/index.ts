// The channels: the one list of them (docs/architecture.md "Channels"). Adding a channel is its
// folder and its line here; the compiler checks every name of names.ts has one.
import type { Channel } from './channel.ts';
import { email } from './email/channel.ts';
import type { ChannelDirective, ChannelName } from './names.ts';
import { rcs } from './rcs/channel.ts';
import { sms } from './sms/channel.ts';
import { twoway } from './twoway/channel.ts';
import { whatsapp } from './whatsapp/channel.ts';

export type { Channel } from './channel.ts';
export { CHANNELS, type ChannelDirective, type ChannelName } from './names.ts';

/** In the order BAD_DIRECTIVE names the channels a directive is for. */
const REGISTRY: { readonly [name in ChannelName]: Channel } = { sms, rcs, email, whatsapp, twoway };

export function channelOf(name: ChannelName): Channel {
  return REGISTRY[name];
}

/** Every channel, in the registry's order. */
export function allChannels(): Channel[] {
  return Object.values(REGISTRY);
}

/** The channels whose files take `directive`. */
export function channelsTaking(directive: ChannelDirective): ChannelName[] {
  return allChannels()
    .filter((c) => c.directives.includes(directive))
    .map((c) => c.name);
}
